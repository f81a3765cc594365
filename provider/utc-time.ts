/**
 * `ms` (epoch milliseconds) as `YYYY-MM-DDTHH:MM:SS.mmmZ`, the text `Date.prototype.toISOString`
 * gives, from the UTC getters alone. `toISOString` makes V8 load ICU's time zone data, which a
 * process then holds for good; the UTC getters do not. A daemon stamps its log lines with this:
 * idle with one shell it is 1.2–1.6 MB smaller (bench idle-memory, alternated, Node 24: 76.9 and
 * 77.3 → 75.7 and 75.8 MB).
 */
export function utcIsoTime(ms: number = Date.now()): string {
  const d = new Date(ms);
  const year = d.getUTCFullYear();
  if (year < 0 || year > 9999) return d.toISOString();
  const two = (n: number) => String(n).padStart(2, '0');
  return (
    `${String(year).padStart(4, '0')}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}` +
    `T${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}` +
    `.${String(d.getUTCMilliseconds()).padStart(3, '0')}Z`
  );
}
