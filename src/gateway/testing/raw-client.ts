import type { IncomingHttpHeaders } from "node:http";
import { connect, type Socket } from "node:net";
import { Http1ResponseReader } from "../upstream/http1-response-reader.js";

export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A client connection that reads answers one after another with the gateway's own response reader. */
export class RawClient {
  readonly socket: Socket;
  readonly #answers: RawAnswer[] = [];
  #waiting: ((answer: RawAnswer) => void) | undefined;
  #reader: Http1ResponseReader;
  closed: Promise<void>;

  /** `closers` gets the socket's destroy, for a test's afterEach. */
  constructor(port: number, closers: (() => Promise<void>)[]) {
    this.socket = connect({ host: "127.0.0.1", port });
    this.socket.on("error", () => undefined);
    this.closed = new Promise((resolve) => this.socket.on("close", () => resolve()));
    this.#reader = this.#newReader();
    this.socket.on("data", (chunk: Buffer) => {
      // One read may carry the end of one answer and the start of the next.
      let rest = chunk;
      while (rest.length > 0) {
        let used: number;
        try {
          used = this.#reader.push(rest);
        } catch {
          this.socket.destroy();
          return;
        }
        if (!this.#reader.done) break;
        this.#reader = this.#newReader();
        rest = rest.subarray(used);
      }
    });
    closers.push(async () => void this.socket.destroy());
  }

  #current: { status: number; headers: IncomingHttpHeaders; parts: Buffer[] } = { status: 0, headers: {}, parts: [] };

  #newReader(): Http1ResponseReader {
    return new Http1ResponseReader({
      onHead: (status, headers) => (this.#current = { status, headers, parts: [] }),
      onBody: (chunk) => this.#current.parts.push(Buffer.from(chunk)),
      onEnd: () => {
        const answer = { status: this.#current.status, headers: this.#current.headers, body: Buffer.concat(this.#current.parts).toString() };
        const waiting = this.#waiting;
        this.#waiting = undefined;
        if (waiting) waiting(answer);
        else this.#answers.push(answer);
      },
    });
  }

  send(bytes: string | Buffer): void {
    this.socket.write(bytes);
  }

  next(): Promise<RawAnswer> {
    const ready = this.#answers.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve) => (this.#waiting = resolve));
  }
}

/**
 * Sends bytes on a fresh connection, closes the sending side, and reads
 * until the server closes the connection (or `waitMs` passes), as latin1 so
 * every byte comes back as it was sent. Node's own server drops a request
 * still being answered when its client closes its side, so against node this
 * suits only a handler that answers at once, or a request node refuses.
 */
export function closingExchange(port: number, bytes: string | Buffer, waitMs = 3000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    let text = "";
    const timer = setTimeout(() => socket.destroy(), waitMs);
    socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(text);
    });
    socket.end(bytes);
  });
}
