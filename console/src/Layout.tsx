import { AppShell, Badge, Burger, Button, Group, Loader, NavLink, Text, Title } from "@mantine/core";
import { useDisclosure } from "@mantine/hooks";
import { useQueryClient } from "@tanstack/react-query";
import { Suspense, useEffect } from "react";
import { Link, Navigate, Outlet, useLocation, useNavigate } from "react-router";
import { ApiError } from "./api.ts";
import { ErrorView } from "./components/ErrorView.tsx";
import { SessionContext } from "./session.tsx";
import { startStream, useStreamStatus } from "./stream.ts";
import { currentToken, setToken } from "./token.ts";
import { useSessionCheck } from "./queries.ts";

const pages = [
  { to: "/", label: "Overview" },
  { to: "/fleet", label: "Fleet" },
  { to: "/models", label: "Models" },
  { to: "/plan", label: "Plan and add" },
  { to: "/playground", label: "Playground" },
  { to: "/keys", label: "Keys and usage" },
  { to: "/access", label: "Access" },
  { to: "/catalog", label: "Catalog" },
  { to: "/events", label: "Events" },
  { to: "/audit", label: "Audit" },
];

function StreamBadge() {
  const status = useStreamStatus();
  return (
    <Badge variant="dot" color={status === "live" ? "green" : "yellow"} styles={{ label: { color: "var(--mantine-color-text)" } }} data-testid="stream-status">
      {status === "live" ? "live" : status}
    </Badge>
  );
}

export function Layout() {
  const [opened, { toggle, close }] = useDisclosure();
  const location = useLocation();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const token = currentToken();
  const session = useSessionCheck(token);

  useEffect(() => {
    if (!session.data) return undefined;
    return startStream(queryClient);
  }, [session.data, queryClient]);
  useEffect(close, [location.pathname, close]);

  if (token === null) return <Navigate to={`/login?next=${encodeURIComponent(location.pathname + location.search)}`} replace />;
  if (session.error instanceof ApiError && session.error.status === 401) {
    setToken(null);
    return <Navigate to={`/login?next=${encodeURIComponent(location.pathname)}&expired=1`} replace />;
  }
  if (session.error) return <ErrorView error={session.error} title="The server did not answer" />;
  if (!session.data) return <Loader m="xl" aria-label="signing in" />;
  const who = session.data.token;

  return (
    <SessionContext.Provider value={who}>
      <AppShell header={{ height: 56 }} navbar={{ width: 210, breakpoint: "sm", collapsed: { mobile: !opened } }} padding="md">
        <AppShell.Header>
          <Group h="100%" px="md" justify="space-between" wrap="nowrap">
            <Group gap="sm" wrap="nowrap">
              <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Toggle the page list" />
              <Title order={1} size="h4">
                llmgw
              </Title>
              <StreamBadge />
            </Group>
            <Group gap="xs" wrap="nowrap">
              <Text size="sm" data-testid="who" visibleFrom="xs">
                {who.name} ({who.role === "admin" ? "admin" : "read-only"})
              </Text>
              <Button
                size="xs"
                variant="default"
                onClick={() => {
                  setToken(null);
                  queryClient.clear();
                  void navigate("/login");
                }}
              >
                Log out
              </Button>
            </Group>
          </Group>
        </AppShell.Header>
        <AppShell.Navbar p="xs" aria-label="Pages">
          {pages.map((page) => (
            <NavLink
              key={page.to}
              component={Link}
              to={page.to}
              label={page.label}
              active={page.to === "/" ? location.pathname === "/" : location.pathname.startsWith(page.to)}
            />
          ))}
        </AppShell.Navbar>
        <AppShell.Main>
          <Suspense fallback={<Loader aria-label="loading the page" />}>
            <Outlet />
          </Suspense>
        </AppShell.Main>
      </AppShell>
    </SessionContext.Provider>
  );
}
