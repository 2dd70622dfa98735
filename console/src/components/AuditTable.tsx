import { Code, Table, Text } from "@mantine/core";
import { time } from "../format.ts";
import type { AuditEventView } from "../types.ts";
import { ScrollTable } from "./ScrollTable.tsx";

/** The fields that changed between two entries, as "path: before → after" lines. */
export function diffLines(before: unknown, after: unknown, path = ""): string[] {
  if (JSON.stringify(before) === JSON.stringify(after)) return [];
  const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
  if (isObject(before) && isObject(after)) {
    return [...new Set([...Object.keys(before), ...Object.keys(after)])].flatMap((key) => diffLines(before[key], after[key], path ? `${path}.${key}` : key));
  }
  const show = (value: unknown) => (value === undefined ? "(none)" : JSON.stringify(value));
  return [`${path || "(entry)"}: ${show(before)} → ${show(after)}`];
}

export function AuditTable({ events }: { events: readonly AuditEventView[] }) {
  if (events.length === 0) return <Text size="sm">No changes recorded.</Text>;
  return (
    <ScrollTable label="audit records" minWidth={640}>
      <Table striped data-testid="audit-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>When</Table.Th>
            <Table.Th>Who</Table.Th>
            <Table.Th>Action</Table.Th>
            <Table.Th>Model</Table.Th>
            <Table.Th>Before → after</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {events.map((event) => (
            <Table.Tr key={event.id}>
              <Table.Td style={{ whiteSpace: "nowrap" }}>{time(event.at)}</Table.Td>
              <Table.Td>
                {event.actor}
                {event.actor_user ? ` (${event.actor_user})` : ""}
              </Table.Td>
              <Table.Td>{event.action}</Table.Td>
              <Table.Td>{event.model ?? "—"}</Table.Td>
              <Table.Td>
                <Code block>{event.before === null ? "added" : event.after === null ? "removed" : diffLines(event.before, event.after).join("\n") || "(no field changed)"}</Code>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </ScrollTable>
  );
}
