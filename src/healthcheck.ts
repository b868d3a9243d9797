// The image's HEALTHCHECK, run in exec form so it needs no shell (distroless-proof): GET
// /healthz on this container's own port; exit 0 on a 200, 1 on anything else within 2 s.
const port = process.env.PORT || '8080'
try {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) })
  process.exit(res.status === 200 ? 0 : 1)
} catch {
  process.exit(1)
}
