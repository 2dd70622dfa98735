import { Anchor, Table, Text } from "@mantine/core";
import { Link } from "react-router";
import type { ReplicaView } from "../types.ts";
import { StopReplica } from "./StopReplica.tsx";
import { ScrollTable } from "./ScrollTable.tsx";
import { StateBadge } from "./StateBadge.tsx";
import { useHeldReplicas } from "../held-rows.ts";
import { replicaCards, runsOn } from "../replica-place.ts";

/** `ctl replicas --node NAME`: what runs on one node, each with its stop (drained first), as on the model page. */
export function NodeReplicas({ node, replicas }: { node: string; replicas: readonly ReplicaView[] }) {
  const { rows: live, hold } = useHeldReplicas(replicas.filter((replica) => runsOn(replica, node) && replica.state !== "stopped"));
  if (live.length === 0) return <Text size="sm">No replica runs here.</Text>;
  return (
    <ScrollTable label={`replicas on ${node}`} minWidth={560}>
      <Table striped data-testid={`node-replicas-${node}`}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Replica</Table.Th>
            <Table.Th>Model</Table.Th>
            <Table.Th>Cards</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th>Endpoint</Table.Th>
            <Table.Th>Stop</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {live.map((replica) => (
            <Table.Tr key={replica.id} data-replica={replica.id}>
              <Table.Td>{replica.id}</Table.Td>
              <Table.Td>
                <Anchor component={Link} to={`/models/${encodeURIComponent(replica.model)}`}>
                  {replica.model}
                </Anchor>
              </Table.Td>
              <Table.Td>{replicaCards(replica, node)}</Table.Td>
              <Table.Td>
                <StateBadge state={replica.state} />
              </Table.Td>
              <Table.Td>
                <Text size="xs" ff="monospace">
                  {replica.endpoint ?? "—"}
                </Text>
              </Table.Td>
              <Table.Td>
                <StopReplica replica={replica} onOpenedChange={(opened) => hold(replica, opened)} />
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </ScrollTable>
  );
}
