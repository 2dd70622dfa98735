import type { IncomingHttpHeaders } from "node:http";
import { headerName } from "../wire/header-name.js";

/** What a response reader hands on, in order: one head, body bytes as they come, one end. */
export interface ResponseReaderEvents {
  onHead(status: number, headers: IncomingHttpHeaders): void;
  onBody(chunk: Buffer): void;
  onEnd(): void;
}

/** An answer that is not HTTP/1.1 as RFC 9112 frames it: the connection it came on cannot be trusted further. */
export class MalformedResponseError extends Error {
  readonly code = "UPSTREAM_MALFORMED";
  constructor(problem: string) {
    super(`the upstream's answer is not valid HTTP/1.1: ${problem}`);
    this.name = "MalformedResponseError";
  }
}

/** A head larger than this is refused: engines send a handful of short headers, and an endless head must not fill memory. */
const maxHeadBytes = 64 * 1024;
/** A chunk-size line (hex size and extensions) longer than this is refused, for the same reason. */
const maxChunkLineBytes = 1024;

const enum State {
  Head,
  Length,
  ChunkLine,
  ChunkData,
  ChunkDataEnd,
  Trailers,
  UntilClose,
  Done,
}

const crlf = Buffer.from("\r\n");

/** The status of "HTTP/1.x NNN reason", or undefined when the line is not that. */
function statusOf(line: string): number | undefined {
  if (line.length < 12 || !line.startsWith("HTTP/1.") || line.charCodeAt(8) !== 0x20 || (line.length > 12 && line.charCodeAt(12) !== 0x20)) return undefined;
  const minor = line.charCodeAt(7);
  if (minor !== 0x30 && minor !== 0x31) return undefined;
  let status = 0;
  for (let index = 9; index < 12; index += 1) {
    const digit = line.charCodeAt(index) - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    status = status * 10 + digit;
  }
  return status >= 100 ? status : undefined;
}
const headEnd = Buffer.from("\r\n\r\n");

/**
 * Reads one HTTP/1.1 response from the bytes of a connection, as they
 * arrive, and frames its body as RFC 9112 says: no body after 1xx, 204 and
 * 304; chunked when the last transfer coding is chunked; else
 * content-length; else everything until the connection closes. Interim 1xx
 * answers are skipped. Body bytes are handed on as soon as they are read
 * (a chunk split over two reads leaves in two parts), so a stream is passed
 * through without waiting. Anything malformed throws MalformedResponseError
 * and the reader is spent.
 *
 * `reusable` says, once done, whether the connection may carry another
 * request: only when the answer was framed by length or chunks, nothing
 * follows it, and neither side asked to close.
 */
export class Http1ResponseReader {
  #state = State.Head;
  /** Bytes of a head or chunk line that are not complete yet. */
  #pending: Buffer | undefined;
  /** Body bytes still to come: of the whole body (Length) or of the current chunk (ChunkData). */
  #left = 0;
  #closeAfter = false;
  #leftover = false;

  constructor(private readonly events: ResponseReaderEvents) {}

  get done(): boolean {
    return this.#state === State.Done;
  }

  /** True once the head is read: from then on a failure is a cut answer, not a missing one. */
  get headRead(): boolean {
    return this.#state !== State.Head;
  }

  get reusable(): boolean {
    return this.#state === State.Done && !this.#closeAfter && !this.#leftover;
  }

  /**
   * Reads the next bytes of the connection, and returns how many of them
   * belong to this answer: all of them, unless it ended within them.
   * Throws MalformedResponseError on a broken answer.
   */
  push(chunk: Buffer): number {
    let bytes = chunk;
    const carried = this.#pending?.length ?? 0;
    if (this.#pending !== undefined) {
      bytes = Buffer.concat([this.#pending, chunk]);
      this.#pending = undefined;
    }
    let at = 0;
    while (at < bytes.length) {
      switch (this.#state) {
        case State.Head: {
          const end = bytes.indexOf(headEnd, at);
          if (end < 0) return this.#keep(bytes, at, maxHeadBytes, "a response head", chunk);
          if (end - at > maxHeadBytes) throw new MalformedResponseError(`the response head is over ${maxHeadBytes} bytes`);
          const head = bytes.toString("latin1", at, end);
          at = end + 4;
          this.#readHead(head);
          break;
        }
        case State.Length: {
          const take = Math.min(this.#left, bytes.length - at);
          this.#left -= take;
          const part = bytes.subarray(at, at + take);
          at += take;
          this.events.onBody(part);
          if (this.#left === 0) this.#finish();
          break;
        }
        case State.ChunkLine: {
          const end = bytes.indexOf(crlf, at);
          if (end < 0) return this.#keep(bytes, at, maxChunkLineBytes, "a chunk size line", chunk);
          this.#readChunkLine(bytes.toString("latin1", at, end));
          at = end + 2;
          break;
        }
        case State.ChunkData: {
          const take = Math.min(this.#left, bytes.length - at);
          this.#left -= take;
          const part = bytes.subarray(at, at + take);
          at += take;
          this.events.onBody(part);
          if (this.#left === 0) this.#state = State.ChunkDataEnd;
          break;
        }
        case State.ChunkDataEnd: {
          if (bytes.length - at < 2) return this.#keep(bytes, at, 2, "a chunk's end", chunk);
          if (bytes[at] !== 0x0d || bytes[at + 1] !== 0x0a) throw new MalformedResponseError("a chunk's data is not followed by CRLF");
          at += 2;
          this.#state = State.ChunkLine;
          break;
        }
        case State.Trailers: {
          const end = bytes.indexOf(crlf, at);
          if (end < 0) return this.#keep(bytes, at, maxHeadBytes, "the trailers", chunk);
          // Trailer fields are read past, not used: the gateway passes no trailers on.
          const empty = end === at;
          at = end + 2;
          if (empty) this.#finish();
          break;
        }
        case State.UntilClose:
          this.events.onBody(at === 0 ? bytes : bytes.subarray(at));
          return chunk.length;
        case State.Done:
          // Bytes after a whole answer were never asked for: the connection is not reused.
          this.#leftover = true;
          return at - carried;
      }
    }
    return chunk.length;
  }

  /**
   * The connection closed. An answer framed by the close ends here; any
   * other that is not done was cut, and "cut" is returned.
   */
  close(): "ended" | "cut" {
    if (this.#state === State.UntilClose) {
      this.#closeAfter = true;
      this.#finish();
      return "ended";
    }
    return this.#state === State.Done ? "ended" : "cut";
  }

  /** Holds an unfinished line for the next read; all of `chunk` is this answer's. */
  #keep(bytes: Buffer, at: number, limit: number, what: string, chunk: Buffer): number {
    if (bytes.length - at > limit) throw new MalformedResponseError(`${what} is over ${limit} bytes`);
    // A part of `chunk` itself is copied: the caller may reuse the memory it read into.
    this.#pending = bytes === chunk ? Buffer.from(bytes.subarray(at)) : bytes.subarray(at);
    return chunk.length;
  }

  #readHead(head: string): void {
    const lineEnd = head.indexOf("\r\n");
    const statusLine = lineEnd < 0 ? head : head.slice(0, lineEnd);
    const status = statusOf(statusLine);
    if (status === undefined) throw new MalformedResponseError(`the status line is ${JSON.stringify(statusLine.slice(0, 80))}`);
    // An interim answer (100 Continue, 103 Early Hints) comes before the real one; 101 would switch protocols, never asked for.
    if (status < 200 && status !== 101) return;
    if (status === 101) throw new MalformedResponseError("the upstream switched protocols (101), which the gateway never asks for");
    const headers: IncomingHttpHeaders = {};
    let at = lineEnd;
    while (at >= 0) {
      const next = head.indexOf("\r\n", at + 2);
      const line = next < 0 ? head.slice(at + 2) : head.slice(at + 2, next);
      at = next;
      const colon = line.indexOf(":");
      if (colon <= 0 || line.charCodeAt(0) === 0x20 || line.charCodeAt(0) === 0x09) {
        throw new MalformedResponseError(`header line ${JSON.stringify(line.slice(0, 80))} is not NAME: VALUE`);
      }
      const rawName = line.slice(0, colon);
      const name = headerName(rawName);
      if (name === undefined) throw new MalformedResponseError(`header name ${JSON.stringify(rawName.slice(0, 80))} is not a token`);
      const value = line.slice(colon + 1).trim();
      const before = headers[name];
      if (before === undefined) headers[name] = value;
      else if (Array.isArray(before)) before.push(value);
      else headers[name] = name === "set-cookie" ? [before, value] : `${before}, ${value}`;
    }
    const connection = headers.connection as string | undefined;
    // HTTP/1.0 keeps a connection only when asked; 1.1 unless told to close.
    if (statusLine.charCodeAt(7) === 0x30) this.#closeAfter = connection === undefined || !/\bkeep-alive\b/i.test(connection);
    else this.#closeAfter = connection !== undefined && /\bclose\b/i.test(connection);
    this.#frame(status, headers);
    this.events.onHead(status, headers);
    if (this.#state === State.Done) this.events.onEnd();
    else if (this.#state === State.Length && this.#left === 0) this.#finish();
  }

  #frame(status: number, headers: IncomingHttpHeaders): void {
    if (status === 204 || status === 304) {
      this.#state = State.Done;
      return;
    }
    const coding = headers["transfer-encoding"] as string | undefined;
    if (coding !== undefined) {
      // A length beside a transfer coding is how responses are smuggled: the coding wins, and the connection is not reused.
      if (headers["content-length"] !== undefined) this.#closeAfter = true;
      const codings = coding.toLowerCase().split(",").map((part) => part.trim());
      if (codings[codings.length - 1] === "chunked") {
        this.#state = State.ChunkLine;
        return;
      }
      this.#state = State.UntilClose;
      this.#closeAfter = true;
      return;
    }
    const length = headers["content-length"] as string | undefined;
    if (length !== undefined) {
      // Repeated lengths arrive joined ("5, 5"): the same one repeated is one length, different ones are no length at all.
      const values = new Set(length.split(",").map((part) => part.trim()));
      const only = values.size === 1 ? [...values][0] : undefined;
      if (only === undefined || !/^\d{1,15}$/.test(only)) throw new MalformedResponseError(`content-length ${JSON.stringify(length.slice(0, 80))} is not one number`);
      this.#left = Number(only);
      this.#state = State.Length;
      return;
    }
    this.#state = State.UntilClose;
    this.#closeAfter = true;
  }

  #readChunkLine(line: string): void {
    const semicolon = line.indexOf(";");
    const size = (semicolon < 0 ? line : line.slice(0, semicolon)).trimEnd();
    if (!/^[0-9a-fA-F]{1,12}$/.test(size)) throw new MalformedResponseError(`chunk size ${JSON.stringify(line.slice(0, 40))} is not hexadecimal`);
    this.#left = Number.parseInt(size, 16);
    this.#state = this.#left === 0 ? State.Trailers : State.ChunkData;
  }

  #finish(): void {
    this.#state = State.Done;
    this.events.onEnd();
  }
}
