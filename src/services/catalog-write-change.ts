import type { ModelEntry } from "../catalog/index.js";
import type { Change } from "../protocol/index.js";

const shown = (value: unknown) => {
  const text = value === undefined ? "(none)" : JSON.stringify(value);
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
};

/** The catalog row a change would write, with the fields that differ, before → after. */
export function catalogWriteChange(name: string, before: ModelEntry | null, after: ModelEntry | null): Change {
  if (before === null) return { kind: "catalog-write", summary: `add ${name} to the catalog`, model: name };
  if (after === null) return { kind: "catalog-write", summary: `remove ${name} from the catalog`, model: name };
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])] as (keyof ModelEntry)[];
  const changed = keys.filter((key) => JSON.stringify(before[key]) !== JSON.stringify(after[key]));
  const fields = changed.map((key) => `${key} ${shown(before[key])} → ${shown(after[key])}`).join("; ");
  return { kind: "catalog-write", summary: changed.length === 0 ? `write ${name} to the catalog unchanged` : `write ${name} to the catalog: ${fields}`, model: name };
}
