import { Button, Card, Group, Modal, SegmentedControl, Stack, Table, Text, TextInput } from "@mantine/core";
import { useState } from "react";
import { stringify } from "yaml";
import { admin } from "../api.ts";
import { ChangeModal } from "../components/ChangeModal.tsx";
import { ErrorView } from "../components/ErrorView.tsx";
import { PageTitle, SectionTitle } from "../components/Section.tsx";
import { YamlEditor } from "../components/YamlEditor.tsx";
import { gib } from "../format.ts";
import type { Plan, PlanCandidate } from "../types.ts";
import { ScrollTable } from "../components/ScrollTable.tsx";
import { usePresets, usePlan } from "../queries.ts";

/** The model name a source suggests: its repository's or last path part's name, in lower case. */
/** The nodes a candidate spans; an older server's answer names none, and means one. */
function nodesOf(candidate: PlanCandidate): number {
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- an older server's answer lacks it
  return candidate.nodes ?? 1;
}

function nameFromSource(source: string): string {
  const last = source.replace(/@.*$/, "").split(/[/:]/).filter((part) => part !== "").pop() ?? "model";
  return last.replace(/\.gguf$/i, "").toLowerCase().replace(/[^a-z0-9._-]+/g, "-");
}

/** The entry "add with this candidate" opens: the candidate's engine, cards and quantisation, at the largest context it holds (whole thousands). */
export function entryFor(candidate: PlanCandidate, source: string): Record<string, unknown> {
  const context = candidate.max_context >= 1024 ? Math.floor(candidate.max_context / 1024) * 1024 : candidate.max_context;
  const profile =
    candidate.gpus === 0
      ? {
          engine: candidate.engine,
          source,
          quantization: candidate.quantization,
          gpus: 0,
          memory_gb: Math.ceil((candidate.weights_bytes_per_card + candidate.overhead_bytes_per_card + candidate.kv_bytes_per_token * context) / 1024 ** 3),
        }
      : {
          engine: candidate.engine,
          source,
          gpu_class: candidate.pool.gpu_class,
          gpus: candidate.gpus,
          // A candidate over several nodes keeps its node count (older servers send none: one node).
          ...(nodesOf(candidate) > 1 ? { nodes: candidate.nodes } : {}),
          quantization: candidate.quantization,
        };
  return { name: nameFromSource(source), context, profiles: [profile] };
}

function Candidates({ plan, onPick }: { plan: Plan; onPick: (candidate: PlanCandidate) => void }) {
  return (
    <ScrollTable label="candidates" minWidth={820}>
      <Table striped data-testid="candidates">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Pool</Table.Th>
            <Table.Th>Engine</Table.Th>
            <Table.Th>Quantisation</Table.Th>
            <Table.Th>Cards</Table.Th>
            <Table.Th>Weights per card</Table.Th>
            <Table.Th>Max context</Table.Th>
            <Table.Th>Fit</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {plan.candidates.map((candidate, index) => (
            <Table.Tr key={index} data-fits={candidate.fits}>
              <Table.Td>
                {candidate.pool.gpu_class}@{candidate.pool.fabric} ({candidate.pool.cards_free}/{candidate.pool.cards_total} free)
              </Table.Td>
              <Table.Td>{candidate.engine}</Table.Td>
              <Table.Td>{candidate.quantization}</Table.Td>
              <Table.Td>{candidate.gpus === 0 ? "CPU" : nodesOf(candidate) > 1 ? `${candidate.nodes} × ${candidate.gpus}` : candidate.gpus}</Table.Td>
              <Table.Td>{gib(candidate.weights_bytes_per_card)}</Table.Td>
              <Table.Td>{candidate.max_context.toLocaleString()}</Table.Td>
              <Table.Td>
                {candidate.fits ? "fits" : `short: ${(candidate.short ?? []).join("; ")}`}
                {candidate.requires ? ` (needs ${candidate.requires})` : ""}
              </Table.Td>
              <Table.Td>
                <Button size="compact-xs" variant="default" onClick={() => onPick(candidate)} aria-label={`Add with this candidate (${index + 1})`}>
                  Add with this candidate
                </Button>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </ScrollTable>
  );
}

function Presets() {
  const presets = usePresets();
  return (
    <>
      <ErrorView error={presets.error} title="No presets" />
      <Stack gap="xs">
        {(presets.data ?? []).map((preset) => (
          <Card key={preset.name} withBorder padding="sm" data-testid={`preset-${preset.name}`}>
            {/* The button keeps its place at the top right whatever the length of the texts beside it. */}
            <Group justify="space-between" wrap="nowrap" align="flex-start">
              <div style={{ flex: 1, minWidth: 0 }}>
                <Text fw={600}>{preset.name}</Text>
                <Text size="sm">{preset.description}</Text>
                <Text size="sm">
                  {preset.runs_on
                    ? `Fits now: ${preset.runs_on.profile} on ${preset.runs_on.node} ${preset.runs_on.cards.length > 0 ? `cards ${preset.runs_on.cards.join(", ")}` : "(CPU)"}`
                    : `Does not fit now: ${preset.why_not ?? "—"}`}
                  {preset.added_as.length > 0 ? ` · added as ${preset.added_as.join(", ")}` : ""}
                </Text>
                <Text size="xs">source {preset.profiles[0]?.source ?? "—"} · licence {preset.licence.name}</Text>
              </div>
              <ChangeModal label="Add" title={`Add the preset ${preset.name}`} request={admin.addPreset(preset.name, {})} follow={preset.name} />
            </Group>
          </Card>
        ))}
      </Stack>
    </>
  );
}

export default function PlanPage() {
  const [source, setSource] = useState("");
  const [fleet, setFleet] = useState<"live" | "what-if">("live");
  const [whatIf, setWhatIf] = useState("4xH100-80GB@nvl0");
  const [context, setContext] = useState("");
  const [asked, setAsked] = useState<{ source: string; gpus?: string; context?: string } | null>(null);
  const [picked, setPicked] = useState<string | null>(null);
  const plan = usePlan(asked);
  return (
    <>
      <PageTitle>Plan and add</PageTitle>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          setAsked({ source: source.trim(), ...(fleet === "what-if" ? { gpus: whatIf } : {}), ...(context ? { context } : {}) });
        }}
      >
        <Group align="end" gap="sm">
          <TextInput label="Source" description="An HF id, a mirror URL or a path on the server" styles={{ description: { color: "var(--mantine-color-text)" } }} value={source} onChange={(event) => setSource(event.currentTarget.value)} w={360} required name="source" />
          <TextInput label="Context (optional)" placeholder="32k" value={context} onChange={(event) => setContext(event.currentTarget.value)} w={120} />
          <SegmentedControl value={fleet} onChange={(value) => setFleet(value === "what-if" ? "what-if" : "live")} data={[{ value: "live", label: "live fleet" }, { value: "what-if", label: "what-if fleet" }]} aria-label="Fleet to plan against" />
          {fleet === "what-if" && <TextInput label="What-if cards" value={whatIf} onChange={(event) => setWhatIf(event.currentTarget.value)} w={260} />}
          <Button type="submit" disabled={source.trim() === ""}>
            Plan
          </Button>
        </Group>
      </form>
      <ErrorView error={plan.error} title="No plan" />
      {plan.isFetching && <Text size="sm">Reading the source…</Text>}
      {plan.data && (
        <>
          <SectionTitle>
            Candidates for {plan.data.source}: {plan.data.architecture.model_type}, {(plan.data.architecture.parameters / 1e9).toFixed(2)}B parameters, {plan.data.architecture.attention_heads} heads
          </SectionTitle>
          <Candidates plan={plan.data} onPick={(candidate) => setPicked(stringify(entryFor(candidate, plan.data.source)))} />
        </>
      )}
      <Modal opened={picked !== null} onClose={() => setPicked(null)} title="Add the model" size="xl" closeButtonProps={{ "aria-label": "Close" }}>
        {picked !== null && <YamlEditor initial={picked} />}
      </Modal>
      <SectionTitle>Presets</SectionTitle>
      <Presets />
    </>
  );
}
