// The Idempotency-Key `register` sends with each manifest: a version 5 UUID (RFC 9562,
// SHA-1) derived from what identifies the registration, so a retry or a rerun of the same
// pack build sends the same key and the runtime answers it as the first time.
import { uuidV5 } from '../sdk/idempotency-key.js'

/** This tool's own namespace for the keys; fixed forever, or reruns stop being recognised. */
export const REGISTER_KEY_NAMESPACE = '0a163a74-5916-4357-b4d1-662553ae35ae'

export type RegistrationId = { projectId: string; packId: string; toolId: string; version: string | undefined; artifactVersion: string }

/**
 * The key over the JSON array [projectId, packId, toolId, version, artifactVersion] (an absent
 * version is null) as JSON.stringify writes it. The project is part of it: the runtime keeps
 * keys per caller, not per project, so the same build registered into a second project must
 * not be answered with the first project's reply. A UUID's case does not change the key.
 */
export function registrationKey(id: RegistrationId): string {
  const name = JSON.stringify([id.projectId.toLowerCase(), id.packId, id.toolId, id.version ?? null, id.artifactVersion])
  return uuidV5(name, REGISTER_KEY_NAMESPACE)
}
