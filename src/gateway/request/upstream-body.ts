import type { GatewayBody } from "../wire/prompt-text.js";
import type { RoutingTarget } from "../routing/routing-snapshot.js";

/**
 * The bytes the upstream gets: the client's own, unless the name must change
 * (an alias, a fallback, an external model's provider name, an adapter the
 * engine selects its own way) or usage must be asked for on a stream.
 */
export function upstreamBody(raw: Buffer, body: GatewayBody, target: RoutingTarget, askUsage: boolean): Buffer {
  const { model, adapter } = target;
  let name = model.external?.model ?? model.name;
  let lora: { id: number; scale: number }[] | undefined;
  if (adapter) {
    if (model.engine === "llamacpp") {
      // llama-server serves one name and selects adapters by number in each request; the others at scale 0.
      lora = model.adapters.map((candidate) => ({ id: candidate.index, scale: candidate.name === adapter.name ? (candidate.scale ?? 1) : 0 }));
    } else {
      name = adapter.name;
    }
  }
  if (name === body.model && !askUsage && lora === undefined) return raw;
  if (name === body.model && lora === undefined && (body.stream_options === undefined || body.stream_options === null)) {
    // Only usage to ask for: the client's bytes with one field put first, instead of the whole body serialised again.
    const opening = raw.indexOf(0x7b);
    if (opening >= 0 && raw.subarray(0, opening).every(isJsonSpace)) return Buffer.concat([askUsageOpening, raw.subarray(opening + 1)]);
  }
  // The parsed body keeps every field the client sent (the schema is loose), so it is not parsed again.
  const json: Record<string, unknown> = { ...body, model: name };
  if (askUsage) json.stream_options = { ...(body.stream_options ?? {}), include_usage: true };
  if (lora !== undefined) json.lora = lora;
  return Buffer.from(JSON.stringify(json));
}

const askUsageOpening = Buffer.from('{"stream_options":{"include_usage":true},');

function isJsonSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}
