import { Code, Table, Text } from "@mantine/core";
import { time } from "../format.ts";
import type { AuditEventView } from "../types.ts";
import { ScrollTable } from "./ScrollTable.tsx";

/** The fields that changed between two entries, as "path: before → after" lines. */
export function diffLines(before: unknown, after: unknown, path = ""): string[] {
  if (JSON.stringify(before) === JSON.stringify(after)) return [];
  if (isObject(before) && isObject(after)) {
    return [...new Set([...Object.keys(before), ...Object.keys(after)])].flatMap((key) => diffLines(before[key], after[key], path ? `${path}.${key}` : key));
  }
  const show = (value: unknown) => (value === undefined ? "(none)" : JSON.stringify(value));
  return [`${path || "(entry)"}: ${show(before)} → ${show(after)}`];
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** An entry's fields as "path: value" lines, so a created or removed item says what it was, not only that it was. */
export function fieldLines(value: unknown, path = ""): string[] {
  if (isObject(value) && Object.keys(value).length > 0) return Object.entries(value).flatMap(([key, inner]) => fieldLines(inner, path ? `${path}.${key}` : key));
  // A list of objects (a model's profiles) reads field by field too, each under its place in the list.
  if (Array.isArray(value) && value.some(isObject)) return value.flatMap((inner, index) => fieldLines(inner, `${path}[${index}]`));
  return [`${path || "(entry)"}: ${JSON.stringify(value)}`];
}

/** A long entry is cut to its first fields, with the count of the rest, so one created model does not fill the page. */
const shownFieldLines = 16;

function createdOrRemoved(label: string, value: unknown): string {
  const lines = fieldLines(value);
  const shown = lines.slice(0, shownFieldLines);
  if (lines.length > shown.length) shown.push(`… ${lines.length - shown.length} more field(s)`);
  return [label, ...shown.map((line) => `  ${line}`)].join("\n");
}

/** What a record changed: the fields of what was added or removed, or the "before → after" of each changed field. */
export function changeText(before: unknown, after: unknown): string {
  if (before === null) return createdOrRemoved("added:", after);
  if (after === null) return createdOrRemoved("removed:", before);
  return diffLines(before, after).join("\n") || "(no field changed)";
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
                <Code block>{changeText(event.before, event.after)}</Code>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </ScrollTable>
  );
}
