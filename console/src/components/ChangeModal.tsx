import { Button, Modal, Stack, Tooltip } from "@mantine/core";
import { useDisclosure } from "@mantine/hooks";
import { useChangePermission } from "../session.tsx";
import { ChangeFlow, type ChangeRequest } from "./ChangeFlow.tsx";

/**
 * A change behind a button: the button opens the change's form with its dry
 * run and apply steps. For a read-only token the button is disabled, and
 * says why on hover and focus.
 */
export function ChangeModal({
  label,
  title,
  request,
  follow,
  children,
  refusedBecause,
  danger,
  onOpenedChange,
}: {
  label: string;
  title: string;
  request: ChangeRequest | null;
  follow?: string | null;
  children?: React.ReactNode;
  /** Why the server would refuse this change before it is asked (a model declared in server.yaml). */
  refusedBecause?: string | null;
  danger?: boolean;
  /** Told when the dialog opens and closes: a list can keep the row it was opened from while it is open. */
  onOpenedChange?: (opened: boolean) => void;
}) {
  const [opened, { open, close }] = useDisclosure(false, { onOpen: () => onOpenedChange?.(true), onClose: () => onOpenedChange?.(false) });
  const permission = useChangePermission();
  const disabledBecause = permission.reason ?? refusedBecause ?? null;
  const button = (
    <Button size="xs" variant={danger ? "outline" : "default"} color={danger ? "red" : undefined} onClick={open} disabled={disabledBecause !== null} data-action={label}>
      {label}
    </Button>
  );
  return (
    <>
      {disabledBecause ? (
        <Tooltip label={disabledBecause} multiline w={300} events={{ hover: true, focus: true, touch: true }}>
          {/* A disabled button takes no focus or hover: the wrapper carries the reason. */}
          <span tabIndex={0} aria-label={`${label}: ${disabledBecause}`} data-disabled-reason={disabledBecause}>
            {button}
          </span>
        </Tooltip>
      ) : (
        button
      )}
      <Modal opened={opened} onClose={close} title={title} size="lg" closeButtonProps={{ "aria-label": "Close the dialog" }}>
        <Stack>
          {children}
          <ChangeFlow request={request} follow={follow ?? null} />
        </Stack>
      </Modal>
    </>
  );
}
