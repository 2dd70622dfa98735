import { z } from "zod";

import { formatDuration, parseDuration } from "./duration-text.js";

export { formatDuration, parseDuration } from "./duration-text.js";

/** A duration as written in YAML or JSON: kept as text (so it round-trips), checked here. */
export const durationSchema = z
  .string()
  .refine((value) => parseDuration(value) !== undefined, {
    message: "a duration such as 90s, 10m, 1h or 1h30m",
    abort: true,
  });

/**
 * A duration with the range it can work in, both ends stated in the message:
 * `0s` heartbeat deadline loses every node at once, and `9999999d` overflows
 * the timers that would wait for it (Node clamps anything over ~24.8 days to
 * 1 ms, so an idle timeout of a year stopped the model at once).
 */
export function boundedDurationSchema(minimumMs: number, maximumMs: number, why: string) {
  const range = `between ${formatDuration(minimumMs)} and ${formatDuration(maximumMs)}`;
  return durationSchema.refine(
    (value) => {
      const milliseconds = parseDuration(value) as number;
      return milliseconds >= minimumMs && milliseconds <= maximumMs;
    },
    { message: `a duration ${range} (${why})`, abort: true },
  );
}
