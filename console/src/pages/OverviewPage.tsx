import { Card, SimpleGrid, Text } from "@mantine/core";
import { CanariesTable } from "../components/CanariesTable.tsx";
import { EventsTable } from "../components/EventsTable.tsx";
import { PageTitle, SectionTitle } from "../components/Section.tsx";
import { SeriesChart } from "../components/SeriesChart.tsx";
import { ErrorView } from "../components/ErrorView.tsx";
import { modelStateText, replicasByModel } from "../model-state.ts";
import { useEvents, useModels, useNodes, useReplicas, useSeries } from "../queries.ts";

function Figure({ label, value, testId }: { label: string; value: string; testId?: string }) {
  return (
    <Card withBorder padding="sm" data-testid={testId}>
      <Text size="xs" c="gray.8">
        {label}
      </Text>
      <Text fw={700} size="xl">
        {value}
      </Text>
    </Card>
  );
}

export default function OverviewPage() {
  const nodes = useNodes();
  const models = useModels();
  const replicas = useReplicas();
  const events = useEvents({ limit: 10 });
  const series = useSeries();
  const nodeList = nodes.data ?? [];
  const cardsByClass = new Map<string, { used: number; total: number }>();
  for (const node of nodeList) {
    for (const gpu of node.gpus) {
      const entry = cardsByClass.get(gpu.class) ?? { used: 0, total: 0 };
      entry.total += 1;
      if (gpu.replica) entry.used += 1;
      cardsByClass.set(gpu.class, entry);
    }
  }
  const groups = new Map<string, number>();
  const byModel = replicasByModel(replicas.data ?? []);
  for (const model of models.data ?? []) {
    const group = modelStateText(model, byModel.get(model.name) ?? []).group;
    groups.set(group, (groups.get(group) ?? 0) + 1);
  }
  const points = series.data?.points ?? [];
  return (
    <>
      <PageTitle>Overview</PageTitle>
      <ErrorView error={nodes.error ?? models.error} title="Could not read the fleet" />
      <SimpleGrid cols={{ base: 2, sm: 4 }}>
        <Figure label="Nodes ready" value={`${nodeList.filter((node) => node.state === "ready").length} of ${nodeList.length}`} testId="nodes-ready" />
        <Figure label="Nodes lost" value={String(nodeList.filter((node) => node.state === "lost").length)} />
        {[...cardsByClass].map(([name, cards]) => (
          <Figure key={name} label={`${name} cards used / free`} value={`${cards.used} / ${cards.total - cards.used}`} />
        ))}
        {(["serving", "starting", "failed", "not-placed", "on-demand"] as const).map((group) => (
          <Figure key={group} label={`Models ${group.replace("-", " ")}`} value={String(groups.get(group) ?? 0)} />
        ))}
      </SimpleGrid>
      <SectionTitle>The last hour, every model</SectionTitle>
      <ErrorView error={series.error} title="No series" />
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <SeriesChart title="Requests and errors per second" unit="/s" points={points} fields={[{ field: "requests_per_s", label: "requests" }, { field: "errors_per_s", label: "errors" }]} />
        <SeriesChart title="Tokens per second" unit="tok/s" points={points} fields={[{ field: "tokens_per_s", label: "tokens" }]} />
        <SeriesChart title="Latency p95" unit="ms" points={points} fields={[{ field: "latency_p95_ms", label: "p95" }]} />
      </SimpleGrid>
      <SectionTitle>Canaries</SectionTitle>
      <CanariesTable />
      <SectionTitle>Latest events</SectionTitle>
      <EventsTable events={[...(events.data ?? [])].reverse()} />
    </>
  );
}
