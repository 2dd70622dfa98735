import { redactUrl } from "../catalog/index.js";
import { DomainError, isDomainError } from "../errors/light.js";
import type { StoredFiguresView } from "../protocol/index.js";

/** What a change says of the kept figures it was checked against: nothing when every file was read now. */
export function storedFiguresNote(stored: readonly StoredFiguresView[]): string {
  if (stored.length === 0) return "";
  const each = stored.map((figures) => `${figures.source} as read at ${figures.read_at}`).join(", ");
  return ` (checked against the planner's figures kept from the last read of ${each}: its files cannot be read now)`;
}

/** The answer's field: absent when every file was read, so answers of readable models stay as they were. */
export function storedFiguresField(stored: readonly StoredFiguresView[]): { stored_figures?: readonly StoredFiguresView[] } {
  return stored.length === 0 ? {} : { stored_figures: stored };
}

/**
 * Runs a check, and when it refuses on kept figures, says so in the refusal:
 * the person then knows the figures are from the files' last read, not from
 * the files as they are now.
 */
export function checkedWithStoredFigures<T>(stored: readonly StoredFiguresView[], check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (stored.length === 0 || !isDomainError(error)) throw error;
    throw new DomainError(error.code, `${error.message}${storedFiguresNote(stored)}`, error.hint, error.details);
  }
}

export function storedFiguresView(source: string, readAt: string, unreadable: string): StoredFiguresView {
  return { source: redactUrl(source), read_at: readAt, unreadable };
}
