import { Alert, Button, Code, CopyButton, Group } from "@mantine/core";

/**
 * A secret the server shows once (a gateway key, a token, the line that
 * joins a node): the value with a copy button, and what to do with it. It
 * is never fetched again, so the page says so in the title.
 */
export function ShownOnce({ title, value, testId, children }: { title: string; value: string; testId: string; children?: React.ReactNode }) {
  return (
    <Alert color="green" mt="sm" title={title} data-testid={testId} styles={{ message: { color: "var(--mantine-color-text)" } }}>
      <Group gap="xs" wrap="nowrap" align="start">
        <Code block style={{ whiteSpace: "pre-wrap", wordBreak: "break-all" }} data-testid={`${testId}-value`}>
          {value}
        </Code>
        <CopyButton value={value}>
          {({ copied, copy }) => (
            <Button size="compact-xs" variant="default" onClick={copy}>
              {copied ? "Copied" : "Copy"}
            </Button>
          )}
        </CopyButton>
      </Group>
      {children}
    </Alert>
  );
}
