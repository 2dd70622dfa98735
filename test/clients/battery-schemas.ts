import { z } from "zod";

/**
 * The schemas every row's tools and structured output use, the same for
 * both engines. Each value is bounded (an enum, a string with a maxLength,
 * a number, which the JSON grammar caps at a few digits): the built-in
 * engine builds its answer with a grammar, and a free string drawn from the
 * tiny model's random weights need never reach its closing quote, so the
 * answer would run into max_tokens mid-call and measure the weights, not the
 * engine. A real model closes its strings; bounded values let the grammar
 * close them for it, and the simulated engine picks from the same enums.
 */

export const cities = ["Oslo", "Paris", "Lima"] as const;
export const zones = ["Europe/Oslo", "UTC", "Asia/Tokyo"] as const;

export const weatherArguments = z.object({ city: z.enum(cities) });
export const timeArguments = z.object({ zone: z.enum(zones) });

/** The tools' parameters as JSON schemas, for the clients that take them so. */
export const weatherParameters = { type: "object", properties: { city: { type: "string", enum: [...cities] } }, required: ["city"], additionalProperties: false };
export const timeParameters = { type: "object", properties: { zone: { type: "string", enum: [...zones] } }, required: ["zone"], additionalProperties: false };

/** The structured-output schema: a name of at most 24 characters, and an age. */
export const person = z.object({ name: z.string().max(24), age: z.number() });
