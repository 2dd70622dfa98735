import { Table } from "@mantine/core";

/**
 * A table that scrolls sideways on a narrow screen. The scrolling box takes
 * the keyboard focus itself (with a name for screen readers): a table of
 * plain text has nothing else to focus, and a keyboard user could not
 * scroll to its right-hand columns on a phone.
 */
export function ScrollTable({ label, minWidth, children }: { label: string; minWidth: number; children: React.ReactNode }) {
  return (
    <Table.ScrollContainer type="native" minWidth={minWidth} tabIndex={0} role="region" aria-label={label}>
      {children}
    </Table.ScrollContainer>
  );
}
