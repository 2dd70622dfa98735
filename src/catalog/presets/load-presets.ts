import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { DomainError } from "../../errors/light.js";
import { parseWithSchema } from "../schema-errors.js";
import { parseYamlSource } from "../yaml-source.js";
import { presetFileSchema, type Preset } from "./preset-schema.js";

/**
 * Reads and checks every `*.yaml` in `folder`: each against the preset
 * schema (errors name the file, line and field), each named by its model's
 * name, which must match the file's name so that `ctl model add NAME` and
 * the file a person opens agree. Sorted by name.
 */
export function loadPresets(folder: string): Preset[] {
  let files: string[];
  try {
    files = readdirSync(folder).filter((file) => file.endsWith(".yaml")).sort();
  } catch (error) {
    throw new DomainError(
      "internal",
      `cannot read the presets folder ${folder}: ${(error as Error).message}`,
      "The installation is incomplete: reinstall llmgw (the presets/ folder ships with the package).",
    );
  }
  const presets = files.map((file) => parsePresetFile(readFileSync(path.join(folder, file), "utf8"), file));
  return presets;
}

/** One preset file's text; `file` is its name, used in errors and checked against the model's name. */
export function parsePresetFile(text: string, file: string): Preset {
  const source = parseYamlSource(text, file);
  const parsed = parseWithSchema(presetFileSchema, source.value, { label: file, locate: source.locate });
  const expected = file.replace(/\.yaml$/, "");
  if (parsed.model.name !== expected) {
    throw new DomainError(
      "invalid_input",
      `${source.locate(["model", "name"]) ?? file}: model.name is "${parsed.model.name}" and the file is ${file}`,
      `Name the file ${parsed.model.name}.yaml, or the model ${expected}: a preset is known by both.`,
    );
  }
  return { ...parsed, name: parsed.model.name, file };
}
