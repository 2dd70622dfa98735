import { Alert, Button, Card, Group, SimpleGrid, Table, Tabs, Text } from "@mantine/core";
import { useState } from "react";
import { useParams } from "react-router";
import { AuditTable } from "../components/AuditTable.tsx";
import { ErrorView } from "../components/ErrorView.tsx";
import { EventsTable } from "../components/EventsTable.tsx";
import { LogTail } from "../components/LogTail.tsx";
import { ModelActions } from "../components/ModelActions.tsx";
import { PageTitle, SectionTitle } from "../components/Section.tsx";
import { SeriesChart } from "../components/SeriesChart.tsx";
import { StateBadge } from "../components/StateBadge.tsx";
import { duration, time } from "../format.ts";
import { modelStateText } from "../model-state.ts";
import { useModel, useModelHistory, useReplicas, useEvents, useAudit, useSeries, useModelCanary } from "../queries.ts";
import type { ArmView, CanaryView } from "../types.ts";
import { StopReplica } from "../components/StopReplica.tsx";
import { ScrollTable } from "../components/ScrollTable.tsx";
import { StartReplica } from "../components/StartReplica.tsx";
import { useHeldReplicas } from "../held-rows.ts";
import { replicaCards, replicaNodes } from "../replica-place.ts";

function Arm({ name, arm }: { name: string; arm: ArmView }) {
  return (
    <Card withBorder padding="sm" data-testid={`arm-${name}`}>
      <Text fw={700}>{name}</Text>
      <Text size="sm">{arm.ready_replicas} replicas serving</Text>
      <Text size="sm">{arm.requests} requests, {arm.errors} errors ({arm.error_rate === null ? "—" : `${(arm.error_rate * 100).toFixed(1)} %`})</Text>
      <Text size="sm">p95 {arm.p95_ms === null ? "—" : `${arm.p95_ms} ms`}</Text>
    </Card>
  );
}

function Canary({ canary }: { canary: CanaryView }) {
  const gate = canary.gate;
  return (
    <Card withBorder data-testid="canary">
      <Text size="sm">
        {canary.state}: revision {canary.revision} (from {canary.from_revision ?? "—"}) at {canary.weight} % of requests, {canary.replicas} replica{canary.replicas === 1 ? "" : "s"}, started {time(canary.started_at)} by {canary.actor}
      </Text>
      <SimpleGrid cols={{ base: 1, sm: 2 }} my="sm">
        <Arm name="stable" arm={canary.arms.stable} />
        <Arm name="canary" arm={canary.arms.canary} />
      </SimpleGrid>
      <Text size="sm" data-testid="gate-verdict">
        {gate
          ? `Gate: error rate at most ${gate.max_error_rate ?? "—"}, p95 at most ${gate.max_p95_ms ?? "—"} ms, over ${gate.min_requests} requests and ${gate.window}. `
          : "No gate: promote or abort by hand. "}
        {canary.decision ?? (canary.state === "running" ? "Verdict: not yet (it holds until the gate's numbers are in)." : "")}
      </Text>
    </Card>
  );
}

export default function ModelPage() {
  const name = useParams().name ?? "";
  const model = useModel(name);
  const replicas = useReplicas(name);
  const series = useSeries(name);
  const events = useEvents({ model: name, limit: 100 });
  const audit = useAudit(name);
  const history = useModelHistory(name);
  const canary = useModelCanary(name);
  const [logOf, setLogOf] = useState<string | null>(null);
  const { rows: live, hold } = useHeldReplicas((replicas.data ?? []).filter((replica) => replica.state !== "stopped"));
  if (model.error) return <ErrorView error={model.error} title={`No model ${name}`} />;
  if (!model.data) return <Text>Loading {name}…</Text>;
  const view = model.data;
  const points = series.data?.points ?? [];
  const canaryRunning = canary.data?.state === "running";
  return (
    <>
      <PageTitle>{view.name}</PageTitle>
      <Group gap="sm" mb="sm">
        <StateBadge state={view.state} />
        <Text size="sm" data-testid="model-state-text">
          {modelStateText(view, replicas.data ?? []).text}
        </Text>
      </Group>
      <Text size="sm">
        class {view.class} · owner {view.owner ?? "—"} · context {view.context ?? "engine default"} · scaling {view.scaling.min}–{view.scaling.max}, idle {view.scaling.idle_timeout}
        {view.fallbacks.length > 0 ? ` · fallbacks ${view.fallbacks.join(", ")}` : ""}
        {view.preset ? ` · from preset ${view.preset}` : ""}
      </Text>
      {view.declared_in && (
        <Alert color="gray" mt="sm" title={`Declared in ${view.declared_in}`} styles={{ message: { color: "var(--mantine-color-text)" } }}>
          Changes to its entry are refused here: the file would undo them when the server next starts. Edit the file instead.
        </Alert>
      )}
      <SectionTitle>Actions</SectionTitle>
      <ModelActions model={view} canaryRunning={canaryRunning} />
      <SectionTitle>Replicas</SectionTitle>
      {view.external === null && (
        <Group mb="xs">
          <StartReplica model={view} />
        </Group>
      )}
      <ScrollTable label="replicas" minWidth={760}>
        <Table striped data-testid="replicas-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Replica</Table.Th>
              <Table.Th>Node</Table.Th>
              <Table.Th>Cards</Table.Th>
              <Table.Th>State</Table.Th>
              <Table.Th>Up</Table.Th>
              <Table.Th>Arm</Table.Th>
              <Table.Th>Engine arguments</Table.Th>
              <Table.Th>Log</Table.Th>
              <Table.Th>Stop</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {live.map((replica) => {
              const profile = view.profiles.find((each) => each.name === replica.profile);
              return (
                <Table.Tr key={replica.id}>
                  <Table.Td>{replica.id}</Table.Td>
                  <Table.Td>{replicaNodes(replica)}</Table.Td>
                  <Table.Td>{replicaCards(replica)}</Table.Td>
                  <Table.Td>
                    <StateBadge state={replica.state} />
                    {replica.progress ? ` ${Math.round(replica.progress.fraction * 100)} %` : ""}
                    {replica.reason ? <Text size="xs">{replica.reason}</Text> : null}
                  </Table.Td>
                  <Table.Td>{replica.state === "ready" ? duration(replica.since) : "—"}</Table.Td>
                  <Table.Td>{replica.arm}</Table.Td>
                  <Table.Td>
                    <Text size="xs" ff="monospace">
                      {replica.engine} {profile?.args.join(" ") ?? ""}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Button size="xs" variant="default" aria-pressed={logOf === replica.id} onClick={() => setLogOf(logOf === replica.id ? null : replica.id)}>
                      {logOf === replica.id ? "hide" : "follow"}
                    </Button>
                  </Table.Td>
                  <Table.Td>
                    <StopReplica replica={replica} onOpenedChange={(opened) => hold(replica, opened)} />
                  </Table.Td>
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      </ScrollTable>
      {live.length === 0 && <Text size="sm">No replica runs.</Text>}
      {logOf && <LogTail replica={logOf} />}
      <SectionTitle>The last hour</SectionTitle>
      <ErrorView error={series.error} title="No series" />
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <SeriesChart title="Requests and errors per second" unit="/s" points={points} fields={[{ field: "requests_per_s", label: "requests" }, { field: "errors_per_s", label: "errors" }]} />
        <SeriesChart title="Latency" unit="ms" points={points} fields={[{ field: "latency_p50_ms", label: "p50" }, { field: "latency_p95_ms", label: "p95" }]} />
        <SeriesChart title="Time to first token" unit="ms" points={points} fields={[{ field: "ttft_p50_ms", label: "p50" }, { field: "ttft_p95_ms", label: "p95" }]} />
        <SeriesChart title="Tokens per second" unit="tok/s" points={points} fields={[{ field: "tokens_per_s", label: "tokens" }]} />
      </SimpleGrid>
      <SectionTitle>Canary</SectionTitle>
      {canary.data ? <Canary canary={canary.data} /> : <Text size="sm">No canary.</Text>}
      <Tabs defaultValue="events" mt="lg">
        <Tabs.List>
          <Tabs.Tab value="events">Events</Tabs.Tab>
          <Tabs.Tab value="audit">Audit</Tabs.Tab>
          <Tabs.Tab value="versions">Versions</Tabs.Tab>
          <Tabs.Tab value="adapters">Adapters</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="events" pt="sm">
          <EventsTable events={[...(events.data ?? [])].reverse()} />
        </Tabs.Panel>
        <Tabs.Panel value="audit" pt="sm">
          <AuditTable events={audit.data ?? []} />
        </Tabs.Panel>
        <Tabs.Panel value="versions" pt="sm">
          {history.error ? <ErrorView error={history.error} title="No version history" /> : <Code>{JSON.stringify(history.data ?? {}, null, 2)}</Code>}
        </Tabs.Panel>
        <Tabs.Panel value="adapters" pt="sm">
          {view.adapters.length === 0 ? (
            <Text size="sm">No adapters.</Text>
          ) : (
            view.adapters.map((adapter) => (
              <Text key={adapter.name} size="sm">
                {adapter.name}: {adapter.source}
                {adapter.scale !== undefined ? ` (scale ${adapter.scale})` : ""}
              </Text>
            ))
          )}
        </Tabs.Panel>
      </Tabs>
    </>
  );
}

function Code({ children }: { children: string }) {
  return (
    <pre style={{ whiteSpace: "pre-wrap", fontSize: 12, margin: 0 }} data-testid="versions">
      {children}
    </pre>
  );
}
