import { Alert, Button, Code, Container, PasswordInput, Stack, Text, Title } from "@mantine/core";
import { useState } from "react";
import { Navigate, useNavigate, useSearchParams } from "react-router";
import { admin, send } from "../api.ts";
import { ErrorView } from "../components/ErrorView.tsx";
import { currentToken, setToken } from "../token.ts";

export function LoginPage() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const [value, setValue] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const next = params.get("next") ?? "/";
  if (currentToken() !== null && !params.get("expired")) return <Navigate to={next} replace />;

  const submit = async (event: React.FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setToken(value.trim());
    try {
      await send(admin.session());
      void navigate(next, { replace: true });
    } catch (caught) {
      setToken(null);
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main>
      <Container size={420} py="xl">
        <form onSubmit={(event) => void submit(event)}>
          <Stack>
            <Title order={1}>llmgw console</Title>
            {params.get("expired") && (
              <Alert color="yellow" title="Signed out" styles={{ message: { color: "var(--mantine-color-text)" } }}>
                The server no longer accepts that token.
              </Alert>
            )}
            <Text size="sm">
              Sign in with an admin-API token: <Code>llmgw ctl token create NAME</Code> makes one (<Code>--role read</Code> for one that only looks). It is kept in this tab only.
            </Text>
            <PasswordInput label="Admin-API token" value={value} onChange={(event) => setValue(event.currentTarget.value)} required autoFocus name="token" />
            <Button type="submit" loading={busy} disabled={value.trim() === ""}>
              Sign in
            </Button>
            <ErrorView error={error} title="Not signed in" />
          </Stack>
        </form>
      </Container>
    </main>
  );
}
