/**
 * Splits a text/event-stream into its events' data as the bytes arrive: an
 * event may be cut anywhere between two writes, so the unfinished rest is
 * kept for the next. Only `data:` lines are read (a chat completion stream
 * has no others); an event's data lines are joined with newlines.
 */
export class SseEvents {
  #rest = "";
  readonly #decoder = new TextDecoder("utf-8");

  /** The data of each event this chunk completes. */
  push(chunk: Buffer | string): string[] {
    this.#rest += typeof chunk === "string" ? chunk : this.#decoder.decode(chunk, { stream: true });
    const events: string[] = [];
    for (;;) {
      const end = eventEnd(this.#rest);
      if (end === undefined) break;
      const data = eventData(this.#rest.slice(0, end.at));
      this.#rest = this.#rest.slice(end.at + end.length);
      if (data !== undefined) events.push(data);
    }
    return events;
  }

  /** The last event when the stream ended without its blank line. */
  end(): string[] {
    const data = eventData(this.#rest);
    this.#rest = "";
    return data === undefined ? [] : [data];
  }
}

function eventEnd(text: string): { at: number; length: number } | undefined {
  const lf = text.indexOf("\n\n");
  const crlf = text.indexOf("\r\n\r\n");
  if (lf < 0 && crlf < 0) return undefined;
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { at: crlf, length: 4 };
  return { at: lf, length: 2 };
}

function eventData(text: string): string | undefined {
  const lines: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    if (line.startsWith("data:")) lines.push(line.slice(line[5] === " " ? 6 : 5));
  }
  return lines.length === 0 ? undefined : lines.join("\n");
}

/** One event as Anthropic's and OpenAI's Responses streams write them: its type named on the event line and in the data. */
export function sseEvent(type: string, data: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}
