import { Box, Group, Stack, Text } from "@mantine/core";
import { gib } from "../format.ts";
import type { CardMemory, NodeCardView } from "../types.ts";

/** The colours of the bar: one hue per part, the same for every replica; the model name is in the text beside it. */
const colours = { weights: "#1864ab", kv: "#4dabf7", overhead: "#a5d8ff", foreign: "#e8590c", used: "#495057" };
const GiB = 1024 ** 3;

function Segment({ bytes, total, colour, label, last }: { bytes: number; total: number; colour: string; label: string; last?: boolean }) {
  if (bytes <= 0 || total <= 0) return null;
  // A white edge after each replica's last part tells two replicas of one card apart in the same colours.
  return <Box title={label} style={{ width: `${(bytes / total) * 100}%`, background: colour, height: "100%", borderRight: last ? "2px solid #fff" : undefined }} />;
}

/**
 * Why the card's own figure differs from the plan, in words: the gap every
 * vLLM operator meets (the engine takes its share of the card at start and
 * fills it with KV cache), or an engine still loading. Nothing when they agree
 * within a GiB or the card does not report.
 */
function gapNote(planned: number, foreign: number, used: number | null, replicas: number): string | null {
  if (used === null) return "the card does not report its used memory (a MIG instance, or an agent of an earlier release)";
  const gap = used - planned - foreign;
  if (Math.abs(gap) < GiB) return null;
  if (replicas === 0) return gap > 0 ? `${gib(gap)} used by nothing llmgw placed here (a process that ended, or one nvidia-smi does not list)` : null;
  return gap > 0
    ? `${gib(gap)} more than planned: vLLM and SGLang take their gpu_memory_utilization share of the card at start and fill it with KV cache`
    : `${gib(-gap)} less than planned: an engine still loading, or one that has not reached its full KV cache`;
}

/**
 * One card's memory, told twice: the planner's share of each replica on it
 * (weights, KV cache, engine overhead) beside memory held by processes
 * llmgw did not start; and below, what the card itself reports as used. So
 * "allocated" and "used" sit side by side, each named, with the gap explained.
 */
export function MemoryBar({ gpu, memory }: { gpu: NodeCardView; memory: CardMemory | undefined }) {
  const total = memory?.total_bytes ?? gpu.memory_bytes;
  const used = memory?.used_bytes ?? gpu.memory_used_bytes;
  const foreign = memory?.foreign_bytes ?? gpu.memory_foreign_bytes ?? 0;
  const shares = memory?.planned ?? [];
  const planned = shares.reduce((sum, share) => sum + share.weights_bytes + share.kv_bytes + share.overhead_bytes, 0);
  const description = [
    ...shares.map((share) => `${share.model}: weights ${gib(share.weights_bytes)}, KV ${gib(share.kv_bytes)}, overhead ${gib(share.overhead_bytes)}`),
    foreign > 0 ? `other processes ${gib(foreign)}` : null,
    `free by plan ${gib(Math.max(0, total - planned - foreign))} of ${gib(total)}`,
  ]
    .filter((line) => line !== null)
    .join("; ");
  const note = gapNote(planned, foreign, used, shares.length);
  return (
    <Stack gap={4}>
      <Box role="img" aria-label={`Card ${gpu.index} planned memory: ${description}`} data-testid="planned-bar" style={{ display: "flex", height: 14, borderRadius: 3, overflow: "hidden", background: "#e9ecef" }}>
        {shares.map((share) => (
          <Group key={share.replica} gap={0} wrap="nowrap" style={{ display: "contents" }}>
            <Segment bytes={share.weights_bytes} total={total} colour={colours.weights} label={`${share.model} weights ${gib(share.weights_bytes)}`} />
            <Segment bytes={share.kv_bytes} total={total} colour={colours.kv} label={`${share.model} KV cache ${gib(share.kv_bytes)}`} />
            <Segment bytes={share.overhead_bytes} total={total} colour={colours.overhead} label={`${share.model} overhead ${gib(share.overhead_bytes)}`} last />
          </Group>
        ))}
        <Segment bytes={foreign} total={total} colour={colours.foreign} label={`not llmgw's ${gib(foreign)}`} />
      </Box>
      <Box role="img" aria-label={`Card ${gpu.index} reports ${gib(used)} used of ${gib(total)}`} data-testid="used-bar" style={{ height: 6, borderRadius: 3, overflow: "hidden", background: "#e9ecef" }}>
        <Box style={{ width: `${((used ?? 0) / Math.max(total, 1)) * 100}%`, background: colours.used, height: "100%" }} />
      </Box>
      {shares.map((share) => (
        <Text key={share.replica} size="xs" data-testid="card-share">
          <Text span fw={600} size="xs">
            {share.model}
          </Text>{" "}
          weights {gib(share.weights_bytes)} · KV {gib(share.kv_bytes)} · overhead {gib(share.overhead_bytes)}
        </Text>
      ))}
      {gpu.replica !== null && shares.length === 0 && (
        <Text size="xs" data-testid="card-share-unknown">
          held by {gpu.replica}: its share is not priced yet (the model's files are still being read, or the planner does not price its engine)
        </Text>
      )}
      {foreign > 0 && (
        <Text size="xs" style={{ color: "#a63c06" }} data-testid="card-foreign">
          held by processes llmgw did not start: {gib(foreign)} (placement counts it as taken)
        </Text>
      )}
      <Text size="xs" data-testid="card-used">
        card reports {gib(used)} used of {gib(total)} · planned {gib(planned + foreign)}
      </Text>
      {note && (
        <Text size="xs" c="gray.8" data-testid="card-gap">
          {note}
        </Text>
      )}
    </Stack>
  );
}

export function MemoryLegend() {
  return (
    <Group gap="md">
      {(
        [
          ["weights", colours.weights],
          ["KV cache", colours.kv],
          ["engine overhead", colours.overhead],
          ["other processes", colours.foreign],
          ["reported used", colours.used],
        ] as const
      ).map(([label, colour]) => (
        <Group key={label} gap={4}>
          <Box w={12} h={12} style={{ background: colour, borderRadius: 2 }} aria-hidden />
          <Text size="xs">{label}</Text>
        </Group>
      ))}
    </Group>
  );
}
