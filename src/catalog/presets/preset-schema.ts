import { z } from "zod";
import { modelEntrySchema } from "../schema.js";

/** What a preset's model is for: the /v1 routes a client calls it through (rerank: /v1/rerank and /v1/score). */
export const presetTasks = ["chat", "completions", "embeddings", "rerank", "images", "image-to-3d"] as const;
export type PresetTask = (typeof presetTasks)[number];

const oneLine = (what: string) =>
  z
    .string({ message: what })
    .min(1, { message: what })
    // eslint-disable-next-line no-control-regex -- control characters are what this finds, on purpose
    .refine((text) => !/[\u0000-\u001f\u007f]/.test(text), { message: `${what}, on one line` });

/**
 * One preset file: what a person reads in the list (`preset`) and the model
 * entry it adds (`model`), which is checked by the very schema of a
 * server.yaml entry, so a preset can be copied into server.yaml as it is.
 */
export const presetFileSchema = z.strictObject({
  preset: z.strictObject({
    description: oneLine("one line a person reads in the list of presets"),
    licence: z.strictObject({
      name: oneLine("the licence's name, such as Apache-2.0"),
      url: z.url({ message: "where the licence text is published, an https URL" }),
    }),
    tasks: z
      .array(z.enum(presetTasks, { message: `one of ${presetTasks.join(", ")}` }))
      .min(1, { message: `at least one task: ${presetTasks.join(", ")}` }),
  }),
  model: modelEntrySchema,
});
export type PresetFile = z.infer<typeof presetFileSchema>;

/** A preset as loaded: its file's content, named by its model's name. */
export interface Preset extends PresetFile {
  readonly name: string;
  /** The file it was read from, for messages. */
  readonly file: string;
}
