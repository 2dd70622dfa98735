import { Badge } from "@mantine/core";

const colours: Record<string, string> = {
  ready: "green",
  serving: "green",
  starting: "blue",
  fetching: "blue",
  pending: "blue",
  settling: "yellow",
  draining: "yellow",
  cordoned: "yellow",
  "on-demand": "gray",
  stopped: "gray",
  external: "grape",
  lost: "red",
  failed: "red",
  "not-placed": "orange",
};

/**
 * A state word with a coloured dot: the word carries the meaning, the colour
 * only helps the eye. Never narrower than the word: in a table squeezed onto
 * a phone, Mantine's badge would otherwise shrink to its dot and an ellipsis.
 */
export function StateBadge({ state }: { state: string }) {
  return (
    <Badge variant="dot" color={colours[state] ?? "gray"} miw="max-content" styles={{ label: { color: "var(--mantine-color-text)" } }}>
      {state}
    </Badge>
  );
}
