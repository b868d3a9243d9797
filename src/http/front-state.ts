// The front's mutable state, in one place: what it serves, whether it drains, and the
// settings every request consults.
import type { Config } from '../config.js'
import type { Log } from '../log.js'
import type { Metrics, RefusalReason } from '../metrics.js'
import type { Serving } from '../serving.js'
import type { InFlight } from './in-flight.js'

export type FrontState = {
  serving: Serving | undefined
  draining: boolean
  config: Pick<Config, 'token' | 'tenantId' | 'envCheck'>
  log: Log
  /** Invoke requests not yet answered. */
  inFlight: InFlight
  /** NO_METRICS unless KINDGI_PACK_METRICS_PORT is set. */
  metrics: Metrics
}

export type NotReady = { error: 'draining' } | { error: 'missing env'; missingEnv: string[] } | { error: 'not ready' }

/** Why the service cannot take calls now, or undefined when it can. */
export function notReady(state: FrontState): NotReady | undefined {
  if (state.draining) return { error: 'draining' }
  if (state.serving === undefined) return { error: 'not ready' }
  if (state.config.envCheck === 'strict' && state.serving.missingEnv.length > 0) {
    return { error: 'missing env', missingEnv: state.serving.missingEnv }
  }
  return undefined
}

/** The metrics label for a not-ready answer. */
export function refusalReason(why: NotReady): RefusalReason {
  if (why.error === 'draining') return 'draining'
  if (why.error === 'missing env') return 'missing-env'
  return 'not-ready'
}
