import { Transform } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { redactOutputLine } from "../catalog/index.js";

/** A line longer than this is passed on in pieces; a secret split across two pieces could then show. */
const maxHeldBytes = 1024 * 1024;

/**
 * Passes a replica's log through line by line with its secrets masked
 * (redactOutputLine). Whole lines are held back until their newline, so a
 * secret that arrives split over two chunks is still seen whole.
 */
export function maskedLines(secretValues: readonly string[]): Transform {
  let held = "";
  // A character split over two chunks is joined before it is read.
  const decoder = new StringDecoder("utf8");
  return new Transform({
    transform(chunk: Buffer | string, _encoding, done) {
      held += typeof chunk === "string" ? chunk : decoder.write(chunk);
      const lastNewline = held.lastIndexOf("\n");
      if (lastNewline >= 0) {
        const complete = held.slice(0, lastNewline + 1);
        held = held.slice(lastNewline + 1);
        this.push(complete.split("\n").map((line) => redactOutputLine(line, secretValues)).join("\n"));
      }
      if (held.length > maxHeldBytes) {
        this.push(redactOutputLine(held, secretValues));
        held = "";
      }
      done();
    },
    flush(done) {
      held += decoder.end();
      if (held.length > 0) this.push(redactOutputLine(held, secretValues));
      done();
    },
  });
}
