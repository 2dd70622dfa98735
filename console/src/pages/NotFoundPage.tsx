import { Anchor, Text, Title } from "@mantine/core";
import { Link } from "react-router";

export default function NotFoundPage() {
  return (
    <>
      <Title order={2}>No such page</Title>
      <Text>
        <Anchor component={Link} to="/">
          Back to the overview
        </Anchor>
      </Text>
    </>
  );
}
