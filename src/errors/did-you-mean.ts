import { closest, distance } from "fastest-levenshtein";

/**
 * ` (did you mean "chat-7b"?)` when one of `known` is a likely typo of
 * `name` (a few edits apart, fewer for short names), else "": a refused name
 * is most often a misspelt one, and a suggestion far from it would mislead.
 */
export function didYouMean(name: string, known: Iterable<string>): string {
  const candidates = [...known].filter((candidate) => candidate !== name);
  if (candidates.length === 0 || name === "") return "";
  const nearest = closest(name.toLowerCase(), candidates.map((candidate) => candidate.toLowerCase()));
  const original = candidates.find((candidate) => candidate.toLowerCase() === nearest) as string;
  const allowed = Math.max(1, Math.min(3, Math.floor(name.length / 3)));
  return distance(name.toLowerCase(), nearest) <= allowed ? ` (did you mean "${original}"?)` : "";
}
