import type { OutgoingHttpHeaders } from "node:http";
import type { Socket } from "node:net";

/**
 * The part of an HTTP response the gateway writes through: node's
 * ServerResponse has it, and so does the gateway's own FrontResponse for the
 * requests its front answers without node:http.
 */
export interface V1Response {
  readonly socket: Socket | null;
  readonly headersSent: boolean;
  readonly destroyed: boolean;
  readonly writableFinished: boolean;
  /** False: the connection closes once this answer has left. */
  shouldKeepAlive: boolean;
  setHeader(name: string, value: string): unknown;
  /** Headers as an object, or as a flat list: name, value, name, value. */
  writeHead(status: number, headers: OutgoingHttpHeaders | string[]): unknown;
  /** False when the client is behind: wait for "drain" before writing more. */
  write(chunk: Buffer | string): boolean;
  end(chunk?: Buffer | string): unknown;
  cork(): void;
  uncork(): void;
  /** Cuts the connection: for an answer that can no longer end well. */
  destroy(): unknown;
  once(event: "close" | "finish" | "drain", listener: () => void): unknown;
  removeListener(event: "close" | "finish" | "drain", listener: () => void): unknown;
}
