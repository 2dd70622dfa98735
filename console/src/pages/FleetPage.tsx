import { Card, Group, Select, SimpleGrid, Stack, Text, Title } from "@mantine/core";
import { useState } from "react";
import { admin } from "../api.ts";
import { ChangeModal } from "../components/ChangeModal.tsx";
import { ErrorView } from "../components/ErrorView.tsx";
import { MemoryBar, MemoryLegend } from "../components/MemoryBar.tsx";
import { NodeReplicas } from "../components/NodeReplicas.tsx";
import { PageTitle, SectionTitle } from "../components/Section.tsx";
import { StateBadge } from "../components/StateBadge.tsx";
import { ago, gib } from "../format.ts";
import { useNodes, useModels, useReplicas, useCardMemory, useHeadroom } from "../queries.ts";
import type { CardMemory, NodeView, ReplicaView } from "../types.ts";

function nodeState(node: NodeView): string {
  if (node.state !== "ready") return node.state;
  if (node.draining) return "draining";
  if (node.cordoned) return "cordoned";
  return "ready";
}

function NodeCard({ node, memory, replicas }: { node: NodeView; memory: Map<string, CardMemory> | undefined; replicas: readonly ReplicaView[] }) {
  return (
    <Card withBorder padding="md" data-testid={`node-${node.name}`}>
      <Group justify="space-between" mb="xs">
        <Title order={3} size="h4">
          {node.name}
        </Title>
        <StateBadge state={nodeState(node)} />
      </Group>
      <Text size="sm">
        {node.hostname} · {node.address} · fabric {node.fabric}
        {node.simulated ? " · simulated" : ""}
      </Text>
      <Text size="sm">
        last heartbeat {ago(node.last_seen_at)} · engines {node.engines.join(", ") || "none found"} · disk free {gib(node.disk_free_bytes)}
      </Text>
      <Text size="sm">
        host memory {gib(node.memory_bytes)} · {node.cpu_cores} cores · {node.replicas.length} replica{node.replicas.length === 1 ? "" : "s"}
      </Text>
      <Group gap="xs" my="sm">
        <ChangeModal label="Cordon" title={`Cordon ${node.name}: no new replicas placed on it`} request={admin.cordon(node.name)} />
        <ChangeModal label="Uncordon" title={`Uncordon ${node.name}`} request={admin.uncordon(node.name)} />
        <ChangeModal label="Drain" title={`Drain ${node.name}: move its replicas elsewhere`} request={admin.drain(node.name)} danger />
      </Group>
      {node.gpus.length === 0 ? (
        <Text size="sm">CPU node: replicas run in host memory.</Text>
      ) : (
        <SimpleGrid cols={{ base: 1, sm: 2 }} spacing="sm">
          {node.gpus.map((gpu) => (
            <Card key={gpu.uuid} withBorder padding="xs" data-testid="gpu-tile">
              <Text size="sm" fw={600}>
                card {gpu.index}: {gpu.name} ({gpu.class})
              </Text>
              <MemoryBar gpu={gpu} memory={memory?.get(`${node.name}\u0000${gpu.index}`)} />
            </Card>
          ))}
        </SimpleGrid>
      )}
      <Text size="sm" fw={600} mt="sm">
        Replicas
      </Text>
      <NodeReplicas node={node.name} replicas={replicas} />
    </Card>
  );
}

function Headroom() {
  const models = useModels();
  const [model, setModel] = useState<string | null>(null);
  const headroom = useHeadroom(model);
  return (
    <Stack gap="xs">
      <Select
        label="How many more replicas of this model fit?"
        placeholder="pick a model"
        searchable
        data={(models.data ?? []).filter((each) => each.external === null).map((each) => each.name)}
        value={model}
        onChange={setModel}
        maw={420}
      />
      <ErrorView error={headroom.error} />
      {headroom.data && (
        <Text size="sm" data-testid="headroom">
          {headroom.data.more_replicas} more replica{headroom.data.more_replicas === 1 ? "" : "s"} of {headroom.data.model}
          {headroom.data.profile ? ` (profile ${headroom.data.profile})` : ""}
          {headroom.data.nodes.length > 0 ? `: ${headroom.data.nodes.map((node) => `${node.replicas} on ${node.node}`).join(", ")}` : ""}
          {headroom.data.reasons.length > 0 ? `. ${headroom.data.reasons.join("; ")}` : ""}
        </Text>
      )}
    </Stack>
  );
}

export default function FleetPage() {
  const nodes = useNodes();
  const memory = useCardMemory();
  const replicas = useReplicas();
  return (
    <>
      <PageTitle>Fleet</PageTitle>
      <ErrorView error={nodes.error} title="Could not read the nodes" />
      <Headroom />
      <SectionTitle>Nodes</SectionTitle>
      <MemoryLegend />
      <Stack mt="sm">
        {(nodes.data ?? []).map((node) => (
          <NodeCard key={node.name} node={node} memory={memory.data} replicas={replicas.data ?? []} />
        ))}
        {nodes.data?.length === 0 && <Text>No node has joined yet: `llmgw agent --server URL --token NODE_TOKEN` on a machine adds one.</Text>}
      </Stack>
    </>
  );
}
