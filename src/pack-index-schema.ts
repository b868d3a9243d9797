// The shape pack-index.md gives, as a JSON Schema the front checks an index against at
// boot. Open where the spec is open (schemas, openObjects); strict where a host relies on it.
const modulePath = { type: 'string', minLength: 1 }
const openObject = { type: 'object' }
const stringArray = { type: 'array', items: { type: 'string' } }

/** The boolean flags tool.schema.json gives a tool: carried alike by an index entry and a ToolManifest. */
export const toolFlagProperties = {
  mutating: { type: 'boolean' },
  needsApprovalWhenUnattended: { type: 'boolean' },
  pauses: { type: 'boolean' },
  resultIsOutsideData: { type: 'boolean' },
  storesFiles: { type: 'boolean' },
  readsFiles: { type: 'boolean' },
} as const

const tool = {
  type: 'object',
  required: ['id', 'input', 'output', 'modulePath'],
  properties: {
    id: { type: 'string', minLength: 1 },
    description: { type: 'string' },
    version: { type: 'string' },
    input: openObject,
    output: openObject,
    effects: { type: 'array', items: openObject },
    needs: { type: 'array', items: openObject },
    needsSpec: openObject,
    sandbox: { type: 'string' },
    limits: openObject,
    network: openObject,
    ...toolFlagProperties,
    spec: openObject,
    modulePath,
  },
}

const checkPoint = { enum: ['before-tool', 'after-tool', 'model-step', 'final-answer'] }

const guardrail = {
  type: 'object',
  required: ['id', 'kind', 'action', 'checkModulePath'],
  properties: {
    id: { type: 'string', minLength: 1 },
    name: { type: 'string' },
    kind: { type: 'string' },
    action: openObject,
    severity: { type: 'string' },
    scope: openObject,
    at: checkPoint,
    sees: { enum: ['turn', 'conversation'] },
    checkPoints: { type: 'array', items: checkPoint },
    checkModulePath: modulePath,
    checkId: { type: 'string', minLength: 1 },
    checkBuiltIn: { const: true },
    configSchema: openObject,
    config: openObject,
    budget: openObject,
    judgeCapabilities: openObject,
    sandbox: { type: 'string' },
    limits: openObject,
    network: openObject,
  },
}

const agent = {
  type: 'object',
  required: ['id', 'version', 'name', 'instructions', 'capabilities', 'tools', 'modulePath'],
  properties: {
    id: { type: 'string' },
    version: { type: 'string' },
    name: { type: 'string' },
    instructions: {
      oneOf: [{ type: 'string' }, { type: 'object', required: ['prompt', 'version'], properties: { prompt: { type: 'string' }, version: { type: 'string' } } }],
    },
    capabilities: { type: 'array' },
    tools: {
      type: 'array',
      items: { type: 'object', required: ['id', 'version'], properties: { id: { type: 'string' }, version: { type: 'string' } } },
    },
    guardrails: stringArray,
    tags: stringArray,
    modulePath,
  },
}

const flow = {
  type: 'object',
  required: ['id', 'version', 'nodes', 'edges', 'kernelPayloadVersion', 'modulePath'],
  properties: {
    id: { type: 'string' },
    version: { type: 'string' },
    nodes: { type: 'array' },
    edges: { type: 'array' },
    maxParallelism: { type: 'integer' },
    kernelPayloadVersion: { const: 1 },
    modulePath,
  },
}

const block = {
  type: 'object',
  required: ['id', 'version', 'kind', 'content', 'modulePath'],
  properties: {
    id: { type: 'string' },
    version: { type: 'string' },
    kind: { enum: ['prompt', 'settings'] },
    description: { type: 'string' },
    content: openObject,
    modulePath,
  },
}

export const packIndexSchema = {
  type: 'object',
  required: ['v', 'packId', 'packVersion', 'artifactVersion', 'publishedAt', 'tools', 'guardrails', 'agents', 'flows'],
  properties: {
    v: { const: 1 },
    packId: { type: 'string' },
    packVersion: { type: 'string' },
    artifactVersion: { type: 'string' },
    publishedAt: { type: 'string', format: 'date-time' },
    tools: { type: 'array', items: tool },
    guardrails: { type: 'array', items: guardrail },
    agents: { type: 'array', items: agent },
    flows: { type: 'array', items: flow },
    blocks: { type: 'array', items: block },
    env: {
      type: 'object',
      required: ['required', 'optional'],
      properties: { required: stringArray, optional: stringArray },
    },
  },
} as const
