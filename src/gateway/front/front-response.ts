import { EventEmitter } from "node:events";
import { STATUS_CODES, type OutgoingHttpHeaders } from "node:http";
import type { Socket } from "node:net";
import type { V1Response } from "../wire/v1-response.js";
import { isHeaderValue } from "../wire/header-name.js";

/** What the front's connection learns of an answer: that it has left (keep the connection or not), or that it was cut. */
export interface FrontResponseOwner {
  answered(keepAlive: boolean): void;
}

/** Bodies up to this size leave in one write with their head; larger ones go as they are, beside it. */
const inlineBytes = 16 * 1024;
// eslint-disable-next-line no-control-regex -- the range starts at NUL only to name all of ASCII; what it finds is the rest
const nonAscii = /[^\x00-\x7f]/;

/**
 * The header lines of an answer from name, value pairs: content-length
 * noted, connection and transfer-encoding left to the response (it frames
 * the body and the connection itself). Throws on a value that would break
 * the head.
 */
function headLines(pairs: readonly string[], extra: readonly string[] | undefined): { text: string; length: boolean; close: boolean } {
  let text = "";
  let length = false;
  let close = false;
  for (const list of extra === undefined ? [pairs] : [pairs, extra]) {
    for (let index = 0; index + 1 < list.length; index += 2) {
      const name = list[index] as string;
      const value = list[index + 1] as string;
      const lower = name.toLowerCase();
      if (lower === "connection") {
        close ||= value.toLowerCase().includes("close");
        continue;
      }
      if (lower === "transfer-encoding") continue;
      if (lower === "content-length") length = true;
      if (!isHeaderValue(value)) throw new Error(`the answer's header ${name} has a line break or a control character in its value`);
      text += `${name}: ${value}\r\n`;
    }
  }
  return { text, length, close };
}

let dateSecond = -1;
let dateText = "";

/** The Date header, made once a second as node's own server does. */
function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(now).toUTCString();
  }
  return dateText;
}

/**
 * One answer the gateway's front writes straight to the client's socket:
 * the part of node's ServerResponse the gateway uses (V1Response), without
 * its stream machinery. A body with a content-length goes as it is, any
 * other in chunks. "close" is emitted once: when the client goes away before
 * the answer has left, or after it has.
 */
export class FrontResponse extends EventEmitter implements V1Response {
  shouldKeepAlive: boolean;
  headersSent = false;
  writableFinished = false;
  #chunked = false;
  #extraHeaders: string[] | undefined;
  #closed = false;
  /** The head, written with the first body bytes. */
  #head: string | undefined;
  #headAscii = true;
  #corks = 0;
  /** Framed text written while corked, to leave in one write. */
  #gathered = "";

  constructor(
    readonly socket: Socket,
    keepAlive: boolean,
    private readonly keepAliveSeconds: number,
    private readonly owner: FrontResponseOwner,
  ) {
    super();
    this.shouldKeepAlive = keepAlive;
  }

  get destroyed(): boolean {
    return this.socket.destroyed;
  }

  setHeader(name: string, value: string): this {
    (this.#extraHeaders ??= []).push(name, value);
    return this;
  }

  writeHead(status: number, headers: OutgoingHttpHeaders | string[]): this {
    if (this.headersSent) throw new Error("the answer's head has already been written");
    let pairs: readonly string[];
    if (Array.isArray(headers)) pairs = headers;
    else {
      const flat: string[] = [];
      for (const name in headers) {
        const value = headers[name];
        if (value !== undefined) flat.push(name, String(value));
      }
      pairs = flat;
    }
    const lines = headLines(pairs, this.#extraHeaders);
    let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Unknown"}\r\ndate: ${httpDate()}\r\n${lines.text}`;
    if (lines.close) this.shouldKeepAlive = false;
    // 1xx, 204 and 304 answers have no body at all, so neither a length nor chunks.
    const bodiless = status < 200 || status === 204 || status === 304;
    if (!lines.length && !bodiless) {
      this.#chunked = true;
      head += "transfer-encoding: chunked\r\n";
    }
    head += this.shouldKeepAlive ? `connection: keep-alive\r\nkeep-alive: timeout=${this.keepAliveSeconds}\r\n\r\n` : "connection: close\r\n\r\n";
    // Held until the first body bytes or the end: head and body leave in one write, one packet.
    this.headersSent = true;
    this.#head = head;
    this.#headAscii = !nonAscii.test(head);
    return this;
  }

  write(chunk: Buffer | string): boolean {
    if (!this.headersSent) this.writeHead(200, []);
    if (this.socket.destroyed || this.writableFinished) return false;
    return this.#send(chunk, false);
  }

  end(chunk?: Buffer | string): this {
    if (this.writableFinished) return this;
    if (!this.headersSent) {
      const length = chunk === undefined ? 0 : typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.length;
      this.writeHead(200, ["content-length", String(length)]);
    }
    const socket = this.socket;
    if (!socket.destroyed) this.#send(chunk, true);
    this.writableFinished = true;
    this.emit("finish");
    this.owner.answered(this.shouldKeepAlive && !socket.destroyed);
    this.emitClose();
    return this;
  }

  /**
   * Writes the held head (if any), the chunk in its framing, and on the last
   * call the chunked terminator, in one socket write when they fit one
   * string: each write is a system call, the largest cost per request left.
   * While corked, text is gathered and leaves in one write at uncork.
   */
  #send(chunk: Buffer | string | undefined, last: boolean): boolean {
    const socket = this.socket;
    const head = this.#head ?? "";
    this.#head = undefined;
    const terminator = last && this.#chunked ? "0\r\n\r\n" : "";
    const length = chunk === undefined ? 0 : typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.length;
    const framed = length > 0 && this.#chunked;
    const opening = framed ? `${head}${length.toString(16)}\r\n` : head;
    const closing = framed ? `\r\n${terminator}` : terminator;
    if (chunk === undefined || length === 0 || typeof chunk === "string") {
      // Text is UTF-8 on the wire; the head joins it only when it is plain ASCII, the same bytes either way.
      if (head.length === 0 || this.#headAscii) return this.#text(chunk === undefined || length === 0 ? opening + closing : opening + chunk + closing, last);
    } else if (chunk.length <= inlineBytes && this.#gathered.length === 0) {
      // latin1 maps each byte to one character and back: the body's bytes leave unchanged.
      return socket.write(opening + chunk.toString("latin1") + closing, "latin1");
    }
    socket.cork();
    this.#flush();
    socket.write(opening, "latin1");
    if (chunk !== undefined && length > 0) socket.write(chunk);
    const more = closing.length > 0 ? socket.write(closing, "latin1") : socket.writableLength < socket.writableHighWaterMark;
    socket.uncork();
    return more;
  }

  #text(text: string, last: boolean): boolean {
    if (this.#corks > 0 && !last) {
      this.#gathered += text;
      return true;
    }
    const all = this.#gathered + text;
    this.#gathered = "";
    return all.length === 0 ? true : this.socket.write(all, "utf8");
  }

  #flush(): void {
    if (this.#gathered.length === 0) return;
    const text = this.#gathered;
    this.#gathered = "";
    this.socket.write(text, "utf8");
  }

  /** Gathers what is written until uncork(): the events of one read from the engine leave in one write. */
  cork(): void {
    this.#corks += 1;
  }

  uncork(): void {
    if (this.#corks === 0) return;
    this.#corks -= 1;
    if (this.#corks === 0 && !this.socket.destroyed) this.#flush();
  }

  destroy(): this {
    this.socket.destroy();
    return this;
  }

  /** @internal The answer has left, or the connection is gone: "close", once. */
  emitClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.emit("close");
  }
}
