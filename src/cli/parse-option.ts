import { InvalidArgumentError } from "commander";
import { parseDuration } from "../catalog/light.js";
import { parseTokenCount } from "../plan/light.js";

/** Commander argument parsers that say what was wrong with the value, for the person at the terminal. */
export function wholeNumber(minimum: number, maximum?: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value.trim()) || Number(value) < minimum) {
      throw new InvalidArgumentError(maximum === undefined ? `"${value}" is not a whole number of ${minimum} or more.` : `"${value}" is not a whole number from ${minimum} to ${maximum}.`);
    }
    if (maximum !== undefined && Number(value) > maximum) throw new InvalidArgumentError(`"${value}" is more than ${maximum}, the most this takes.`);
    return Number(value);
  };
}

export function positiveNumber(value: string): number {
  const number = Number(value);
  if (value.trim() === "" || !Number.isFinite(number) || number <= 0) throw new InvalidArgumentError(`"${value}" is not a number greater than 0.`);
  return number;
}

export function duration(value: string): string {
  if (parseDuration(value) === undefined) throw new InvalidArgumentError(`"${value}" is not a duration such as 90s, 10m or 1h.`);
  return value;
}

/** A share of something, such as a card's memory: more than 0, at most 1 (0.90, not 90). */
export function fraction(value: string): number {
  const number = Number(value);
  if (value.trim() === "" || !Number.isFinite(number) || number <= 0 || number > 1) {
    throw new InvalidArgumentError(`"${value}" is not a fraction between 0 and 1 (write 0.90 for 90%).`);
  }
  return number;
}

/** A number of tokens in any form the output prints: 32768, 32k, 32K, 1M (k = 1024, M = 1024²). */
export function tokenCount(value: string): number {
  const tokens = parseTokenCount(value);
  if (tokens === undefined || tokens < 1) throw new InvalidArgumentError(`"${value}" is not a number of tokens such as 32768, 32k or 1M (k = 1024).`);
  return tokens;
}
