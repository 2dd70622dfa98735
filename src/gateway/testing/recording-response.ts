import type { OutgoingHttpHeaders } from "node:http";
import type { V1Response } from "../wire/v1-response.js";

/** A V1Response that keeps what was written to it, for tests of what wraps or writes one. */
export class RecordingResponse implements V1Response {
  readonly socket = null;
  headersSent = false;
  destroyed = false;
  writableFinished = false;
  shouldKeepAlive = true;
  status = 0;
  headers: Record<string, string> = {};
  readonly chunks: string[] = [];

  get body(): string {
    return this.chunks.join("");
  }

  setHeader(name: string, value: string): unknown {
    this.headers[name.toLowerCase()] = value;
    return this;
  }
  writeHead(status: number, headers: OutgoingHttpHeaders | string[]): unknown {
    this.status = status;
    this.headersSent = true;
    const flat = Array.isArray(headers) ? headers : Object.entries(headers).flatMap(([name, value]) => [name, String(value)]);
    for (let index = 0; index + 1 < flat.length; index += 2) this.headers[(flat[index] as string).toLowerCase()] = flat[index + 1] as string;
    return this;
  }
  write(chunk: Buffer | string): boolean {
    this.chunks.push(chunk.toString());
    return true;
  }
  end(chunk?: Buffer | string): unknown {
    if (chunk !== undefined) this.chunks.push(chunk.toString());
    this.writableFinished = true;
    return this;
  }
  cork(): void {}
  uncork(): void {}
  destroy(): unknown {
    this.destroyed = true;
    return this;
  }
  once(): unknown {
    return this;
  }
  removeListener(): unknown {
    return this;
  }
}
