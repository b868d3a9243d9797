// The Hono app: four routes and the order of checks docs/spec/CONTRACT.md §2 gives (route, method,
// token, tenant, then readiness and capacity). All answers are JSON.
import type { HttpBindings } from '@hono/node-server'
import { Hono, type Context } from 'hono'
import { infoBody } from '../serving.js'
import { notReady, type FrontState } from './front-state.js'
import { tenantHeaderGuard, tokenGuard, type Refusal } from './access-checks.js'
import { invoke, type InvokeOptions } from './invoke.js'
import { markProven } from './proven-connections.js'

type Env = { Bindings: HttpBindings }
type Ctx = Context<Env>

export function createApp(state: FrontState, options: InvokeOptions): Hono<Env> {
  const app = new Hono<Env>()
  const checkToken = tokenGuard(state.config.token)
  const refuse = (c: Ctx, refusal: Refusal) => c.json(refusal.body, refusal.status)
  const guard = (c: Ctx): Refusal | undefined => {
    const refusal = checkToken(c.env.incoming.headers) ?? tenantHeaderGuard(state.config.tenantId, c.env.incoming.headers)
    if (refusal === undefined) markProven(c.env.incoming.socket)
    return refusal
  }

  app.get('/healthz', (c) => c.json({ status: 'ok' }))
  app.get('/readyz', (c) => {
    const why = notReady(state)
    return why === undefined ? c.json({ status: 'ready' }) : c.json(why, 503, { 'Retry-After': '1' })
  })
  app.get('/v1/info', (c) => {
    const refusal = guard(c)
    if (refusal !== undefined) return refuse(c, refusal)
    if (state.serving === undefined) return c.json({ error: 'not ready' }, 503, { 'Retry-After': '1' })
    return c.json(infoBody(state.serving))
  })
  app.post('/v1/invoke', (c) => {
    const refusal = guard(c)
    if (refusal !== undefined) return refuse(c, refusal)
    state.inFlight.enter()
    c.env.outgoing.on('close', state.inFlight.leave) // fires once per response
    return invoke(c, state, options)
  })

  for (const path of ['/healthz', '/readyz', '/v1/info']) app.all(path, (c) => c.json({ error: 'Use GET' }, 405))
  app.all('/v1/invoke', (c) => c.json({ error: 'Use POST' }, 405))
  app.notFound((c) => c.json({ error: `No route ${c.req.path}` }, 404))
  app.onError((err, c) => {
    state.log.error('internal-error', { error: err.message, stack: err.stack })
    return c.json({ error: 'The pack service failed to handle the request' }, 500)
  })
  return app
}
