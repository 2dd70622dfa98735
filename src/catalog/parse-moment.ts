import { parseDuration } from "./duration.js";
import { DomainError } from "../errors/light.js";

/**
 * A moment as an operator types it: a duration counted from now (`30d`,
 * `12h`; ahead for an expiry, back for "usage since"), a date (`2027-01-31`,
 * midnight UTC) or a date-time with its zone (`2027-01-31T18:00:00Z`).
 * Returns milliseconds since the epoch.
 */
export function parseMoment(text: string, nowMs: number, direction: "ahead" | "back", option: string): number {
  const duration = parseDuration(text);
  let atMs = Number.NaN;
  if (duration !== undefined) atMs = direction === "ahead" ? nowMs + duration : nowMs - duration;
  else if (/^\d{4}-\d{2}-\d{2}$/.test(text)) atMs = Date.parse(`${text}T00:00:00Z`);
  else if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text)) atMs = Date.parse(text);
  if (Number.isNaN(atMs)) {
    throw new DomainError(
      "invalid_input",
      `${option}: "${text}" is neither a duration nor a date`,
      `Give a duration ${direction === "ahead" ? "from now" : "back from now"} such as 30d or 12h, or a date such as 2027-01-31 (UTC) or 2027-01-31T18:00:00Z.`,
    );
  }
  return atMs;
}
