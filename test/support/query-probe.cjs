// A program that asks the terminal about itself, as vim, fzf or fish do at start: in raw mode it
// writes each query named on its command line, collects what comes back on stdin until an answer
// is complete plus a while longer (a second answer would arrive then), or a deadline, and prints
// `ANSWER NAME HEX` (`-` for nothing). Node 18+, no dependencies: it runs on any host.
const QUERIES = {
  DA1: '\x1b[c',
  DA2: '\x1b[>c',
  DSR5: '\x1b[5n',
  // After a known number of characters on a fresh line: the column is 4.
  CPR: '\r\nxyz\x1b[6n',
  DECXCPR: '\x1b[?6n',
  DECRQM: '\x1b[?25$p',
  XTVERSION: '\x1b[>q',
  OSC10: '\x1b]10;?\x07',
  OSC11: '\x1b]11;?\x1b\\',
  OSC12: '\x1b]12;?\x07',
  WIN18: '\x1b[18t',
  WIN14: '\x1b[14t',
  KITTY_DA1: '\x1b[?u\x1b[c',
};
const DEADLINE_MS = 2000;
const AFTER_ANSWER_MS = 300;
const complete = (b) => b.length > 0 && /(?:[cnRty]|\x1b\\|\x07)$/.test(b.toString('latin1'));

const names = (process.argv[2] || 'DA1').split(',');
process.stdin.setRawMode(true);
let got = Buffer.alloc(0);
process.stdin.on('data', (d) => {
  got = Buffer.concat([got, d]);
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  for (const name of names) {
    got = Buffer.alloc(0);
    process.stdout.write(QUERIES[name]);
    const t0 = Date.now();
    while (!complete(got) && Date.now() - t0 < DEADLINE_MS) await sleep(10);
    if (complete(got)) await sleep(AFTER_ANSWER_MS);
    process.stdout.write(`\r\nANSWER ${name} ${got.toString('hex') || '-'}\r\n`);
  }
  process.stdin.setRawMode(false);
  process.exit(0);
})();
