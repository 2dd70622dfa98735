import path from "node:path";
import { packageRoot } from "../../package-root.js";
import { loadPresets } from "./load-presets.js";
import type { Preset } from "./preset-schema.js";

/** The presets folder shipped in the package, beside package.json. */
export const shippedPresetsFolder = path.join(packageRoot.directory, "presets");

let loaded: readonly Preset[] | undefined;

/** The shipped presets, read once: they are part of the installed package and do not change while it runs. */
export function shippedPresets(): readonly Preset[] {
  loaded ??= loadPresets(shippedPresetsFolder);
  return loaded;
}
