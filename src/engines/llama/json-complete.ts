/**
 * Whether a grammar-built JSON answer is complete: an object, array or
 * string whose closing character has come. The grammar then allows only
 * whitespace, which a model with random (or poor) weights may write until
 * max_tokens; ending here ends the answer as the end-of-generation token would.
 * A bare number is never called complete: another digit may follow.
 */
export function jsonComplete(text: string): boolean {
  const trimmed = text.trim();
  const last = trimmed.at(-1);
  if (last !== "}" && last !== "]" && last !== '"') return false;
  try {
    JSON.parse(trimmed);
    return true;
  } catch {
    return false;
  }
}
