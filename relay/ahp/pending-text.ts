/**
 * Output text a terminal channel applied but has not folded into its state's content yet: the
 * consecutive `terminal/data` actions since the last fold, kept as the pieces they came in. A
 * flood that nobody snapshots then costs no string building (appending each piece to the content
 * made a rope that the content bound flattened again and again: a sixth of the relay's CPU in a
 * flood). Only the newest `limit` code units can outlive the content bound, so pieces wholly
 * before them are dropped as newer ones arrive; `take` then says the content before the text is
 * beyond the bound too.
 */
export class PendingText {
  private pieces: string[] = [];
  private chars = 0;
  private cut = false;

  constructor(private readonly limit: number) {}

  /** Adds `text`; true when older pieces went (everything before the pending text is beyond the bound). */
  push(text: string): boolean {
    this.pieces.push(text);
    this.chars += text.length;
    let drop = 0;
    let chars = this.chars;
    while (drop < this.pieces.length - 1 && chars - this.pieces[drop]!.length >= this.limit) {
      chars -= this.pieces[drop]!.length;
      drop++;
    }
    if (drop === 0) return false;
    this.pieces.splice(0, drop);
    this.chars = chars;
    this.cut = true;
    return true;
  }

  /**
   * The text, oldest first, and whether older text was dropped (what came before it, in the
   * content as well, lies beyond the bound); empties this. Undefined when there is none.
   */
  take(): { text: string; cut: boolean } | undefined {
    if (this.pieces.length === 0) return undefined;
    const taken = { text: this.pieces.join(''), cut: this.cut };
    this.pieces = [];
    this.chars = 0;
    this.cut = false;
    return taken;
  }
}
