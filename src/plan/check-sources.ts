import type { ModelEntry } from "../catalog/index.js";
import { DomainError, isDomainError } from "../errors/light.js";
import { formatGiB } from "./format.js";
import { readAdapter } from "./read-adapter.js";
import { readFileSize } from "./read-file-size.js";
import { readModelSource, type ReadModelSourceOptions } from "./read-model-source.js";

/** One source that answered: where it is in the entry, and how large its weights are. */
export interface SourceChecked {
  readonly where: string;
  readonly source: string;
  /** The weights' bytes (safetensors or GGUF tensors); undefined for an adapter. */
  readonly bytes: number | undefined;
  readonly summary: string;
}

/** A remote read gets this long before the check says the source did not answer. */
export const defaultSourceCheckTimeoutMs = 10_000;

/**
 * Asks every weights source of a model being added (each profile's, each
 * adapter's) whether it exists and what it holds, before anything is stored:
 * a typo in a URL is caught at the prompt, not by a replica failing on a node
 * minutes later. Every failing source is named with its place and reason in
 * one refusal. A ComfyUI profile's weights are its workflow's files, each
 * asked for its size; its `source` only says where the model comes from.
 */
export async function checkEntrySources(entry: ModelEntry, options: ReadModelSourceOptions): Promise<SourceChecked[]> {
  const read = { requestTimeoutMs: defaultSourceCheckTimeoutMs, ...options };
  const checks: { where: string; source: string; run: () => Promise<SourceChecked> }[] = [];
  for (const [index, profile] of (entry.profiles ?? []).entries()) {
    if (profile.engine === "comfyui") {
      for (const [fileIndex, file] of (profile.comfy?.files ?? []).entries()) {
        const where = `profiles[${index}].comfy.files[${fileIndex}].source`;
        checks.push({
          where,
          source: file.source,
          run: async () => {
            const bytes = await readFileSize(file.source, read);
            return { where, source: file.source, bytes, summary: `${formatGiB(bytes)} (for models/${file.to.replace(/\/+$/, "")}/)` };
          },
        });
      }
      continue;
    }
    const where = `profiles[${index}].source`;
    checks.push({
      where,
      source: profile.source,
      run: async () => {
        const facts = await readModelSource(profile.source, read);
        const format = facts.checkpoint.format === "gguf" ? `GGUF ${facts.checkpoint.dtype}` : `safetensors ${facts.checkpoint.dtype}`;
        return { where, source: profile.source, bytes: facts.checkpoint.bytes, summary: `${formatGiB(facts.checkpoint.bytes)} (${format}, ${(facts.parameters / 1e9).toFixed(2)}B parameters)` };
      },
    });
  }
  for (const [index, adapter] of (entry.adapters ?? []).entries()) {
    const where = `adapters[${index}].source`;
    checks.push({
      where,
      source: adapter.source,
      run: async () => {
        const facts = await readAdapter(adapter.source, read);
        return { where, source: adapter.source, bytes: undefined, summary: facts.format === "peft" ? `PEFT LoRA, rank ${facts.rank}` : `GGUF LoRA for ${facts.modelType}` };
      },
    });
  }
  const outcomes = await Promise.all(
    checks.map(async (check) => {
      try {
        return { ok: await check.run() };
      } catch (error) {
        if (!isDomainError(error)) throw error;
        return { failed: { where: `${entry.name}.${check.where}`, message: `${error.message} (${error.hint})` } };
      }
    }),
  );
  const failed = outcomes.flatMap((outcome) => ("failed" in outcome && outcome.failed ? [outcome.failed] : []));
  if (failed.length > 0) {
    throw new DomainError(
      "source_unreadable",
      // The places in the message, the reasons in the details: the CLI prints both, and each reason once.
      `${entry.name}: ${failed.length === 1 ? "a source does not answer as a model" : `${failed.length} sources do not answer as models`}: ${failed.map((failure) => failure.where).join(", ")}`,
      "Fix the source; or, when the nodes reach it by an address the server does not (or the mirror is not up yet), add it unread with `ctl model add --no-source-check` (POST /api/v1/models?source_check=false).",
      failed,
    );
  }
  return outcomes.flatMap((outcome) => ("ok" in outcome && outcome.ok ? [outcome.ok] : []));
}
