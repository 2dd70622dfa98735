import { Title } from "@mantine/core";

export function PageTitle({ children }: { children: React.ReactNode }) {
  return (
    <Title order={2} mb="md">
      {children}
    </Title>
  );
}

export function SectionTitle({ children }: { children: React.ReactNode }) {
  return (
    <Title order={3} size="h4" mt="lg" mb="xs">
      {children}
    </Title>
  );
}
