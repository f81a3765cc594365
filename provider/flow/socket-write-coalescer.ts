/** What {@link corkPerTurn} needs of a socket (a net.Socket has it). */
export interface Corkable {
  cork(): void;
  uncork(): void;
}

/**
 * Returns a function to call before each write to `socket`: the first write of a turn of the
 * event loop corks the socket, and the end of the turn uncorks it, so everything sent in one turn
 * (a keystroke's echo and its input acknowledgement, an input and the credit riding with it)
 * leaves as one write: one TCP segment instead of a small one that the next must wait behind.
 */
export function corkPerTurn(socket: Corkable | undefined): () => void {
  let corked = false;
  const uncork = () => {
    corked = false;
    socket?.uncork();
  };
  return () => {
    if (corked || !socket) return;
    corked = true;
    socket.cork();
    setImmediate(uncork);
  };
}
