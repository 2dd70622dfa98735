import { Anchor, Table, Text } from "@mantine/core";
import { Link } from "react-router";
import { time } from "../format.ts";
import type { EventView } from "../types.ts";
import { ScrollTable } from "./ScrollTable.tsx";

export function EventsTable({ events }: { events: readonly EventView[] }) {
  if (events.length === 0) return <Text size="sm">No events.</Text>;
  return (
    <ScrollTable label="events" minWidth={560}>
      <Table striped data-testid="events-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>When</Table.Th>
            <Table.Th>Kind</Table.Th>
            <Table.Th>Model</Table.Th>
            <Table.Th>Node</Table.Th>
            <Table.Th>Message</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {events.map((event) => (
            <Table.Tr key={event.id}>
              <Table.Td style={{ whiteSpace: "nowrap" }}>{time(event.at)}</Table.Td>
              <Table.Td>{event.kind}</Table.Td>
              <Table.Td>
                {event.model ? (
                  <Anchor component={Link} to={`/models/${encodeURIComponent(event.model)}`}>
                    {event.model}
                  </Anchor>
                ) : (
                  "—"
                )}
              </Table.Td>
              <Table.Td style={{ whiteSpace: "nowrap" }}>{event.node ?? "—"}</Table.Td>
              <Table.Td>{event.message}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </ScrollTable>
  );
}
