import { Anchor, Table, Text } from "@mantine/core";
import { Link } from "react-router";
import type { ArmView } from "../types.ts";
import { ErrorView } from "./ErrorView.tsx";
import { ScrollTable } from "./ScrollTable.tsx";
import { useCanaries } from "../queries.ts";

function arm(view: ArmView): string {
  const rate = view.error_rate === null ? "—" : `${(view.error_rate * 100).toFixed(1)} %`;
  return `${view.requests} requests, ${view.errors} errors (${rate}), p95 ${view.p95_ms === null ? "—" : `${view.p95_ms} ms`}`;
}

/** `ctl model canaries`: every canary with its arms side by side; a model's own page has its gate and the actions. */
export function CanariesTable() {
  const canaries = useCanaries();
  if (canaries.error) return <ErrorView error={canaries.error} title="Could not read the canaries" />;
  if (canaries.data?.length === 0) return <Text size="sm">No canary: start one from a model&apos;s Actions.</Text>;
  return (
    <ScrollTable label="canaries" minWidth={720}>
      <Table striped data-testid="canaries-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Model</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th>Revision</Table.Th>
            <Table.Th>Weight</Table.Th>
            <Table.Th>Stable</Table.Th>
            <Table.Th>Canary</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {(canaries.data ?? []).map((canary) => (
            <Table.Tr key={canary.model} data-model={canary.model}>
              <Table.Td>
                <Anchor component={Link} to={`/models/${encodeURIComponent(canary.model)}`}>
                  {canary.model}
                </Anchor>
              </Table.Td>
              <Table.Td>{canary.state}</Table.Td>
              <Table.Td>
                {canary.revision} (from {canary.from_revision ?? "—"})
              </Table.Td>
              <Table.Td>{canary.weight} %</Table.Td>
              <Table.Td>{arm(canary.arms.stable)}</Table.Td>
              <Table.Td>{arm(canary.arms.canary)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </ScrollTable>
  );
}
