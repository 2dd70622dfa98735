import { Alert, List, Text } from "@mantine/core";
import { ApiError } from "../api.ts";

/** The server's refusal as it wrote it: message, each detail with its place, and the hint. */
export function ErrorView({ error, title = "Refused" }: { error: unknown; title?: string }) {
  if (!error) return null;
  const apiError = error instanceof ApiError ? error : null;
  const message = error instanceof Error ? error.message : String(error);
  return (
    <Alert color="red" title={title} role="alert" data-testid="refusal" styles={{ message: { color: "var(--mantine-color-text)" } }}>
      <Text size="sm" data-testid="refusal-message">{message}</Text>
      {apiError && apiError.details.length > 0 && (
        <List size="sm" mt="xs">
          {apiError.details.map((detail) => (
            <List.Item key={`${detail.where}:${detail.message}`}>
              <Text span ff="monospace" size="sm">{detail.where}</Text>: {detail.message}
            </List.Item>
          ))}
        </List>
      )}
      {apiError?.hint && (
        <Text size="sm" mt="xs" data-testid="refusal-hint">
          {apiError.hint}
        </Text>
      )}
      {apiError?.code && (
        <Text size="xs" mt="xs" c="gray.8">
          code {apiError.code} · HTTP {apiError.status}
        </Text>
      )}
    </Alert>
  );
}
