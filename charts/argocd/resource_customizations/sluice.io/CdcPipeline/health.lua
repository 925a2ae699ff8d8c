-- Argo CD health of a Sluice CdcPipeline (sluice.io/v1alpha1).
-- Reads what the operator writes: observedGeneration, phase, conditions, split progress,
-- the schema change in flight. Written for gopher-lua (Lua 5.1); nil-safe throughout.
local hs = {}

local function condition(conditionType)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == conditionType then
      return c
    end
  end
  return nil
end

local function result(status, message)
  hs.status = status
  hs.message = message
  return hs
end

-- Suspended is what the user asked for, also before the operator has seen the pipeline.
if obj.spec ~= nil and obj.spec.suspend == true then
  return result("Suspended", "spec.suspend is set: no Spark driver runs; the pipeline's state is kept")
end

if obj.status == nil then
  return result("Progressing", "Waiting for the Sluice operator to reconcile the pipeline")
end

local generation = obj.metadata ~= nil and obj.metadata.generation or nil
local observed = obj.status.observedGeneration
if generation ~= nil and (observed == nil or observed < generation) then
  return result("Progressing", "Waiting for the Sluice operator to observe generation " .. generation)
end

local phase = obj.status.phase
local degraded = condition("Degraded")
if phase == "Failed" or (degraded ~= nil and degraded.status == "True") then
  local message = "The pipeline failed"
  if degraded ~= nil and degraded.message ~= nil and degraded.message ~= "" then
    message = degraded.message
  end
  return result("Degraded", message)
end

if phase == "SchemaChangePaused" then
  local change = obj.status.schemaChange or {}
  local id = change.id or "?"
  if change.step == "AwaitingApproval" then
    local pending = condition("SchemaChangePending")
    if pending ~= nil and pending.message ~= nil and pending.message ~= "" then
      return result("Suspended", pending.message)
    end
    return result("Suspended", "Schema change " .. id .. " waits for approval: add it to spec.schemaChanges.approved")
  end
  return result("Progressing", "Applying schema change " .. id)
end

if phase == "Pending" or phase == "Snapshotting" then
  local snapshot = obj.status.snapshot
  if snapshot ~= nil and snapshot.progress ~= nil then
    return result("Progressing", "Snapshotting: " .. snapshot.progress .. " splits")
  end
  return result("Progressing", "Planning the snapshot")
end

if phase == "Streaming" then
  local ready = condition("Ready")
  if ready ~= nil and ready.status == "True" then
    local lag = ""
    if obj.status.binlog ~= nil and obj.status.binlog.lag ~= nil then
      lag = ", lag " .. obj.status.binlog.lag
    end
    return result("Healthy", "Streaming" .. lag)
  end
  return result("Progressing", "Starting the streaming driver")
end

if phase == "Completed" then
  return result("Healthy", "The snapshot is in the target")
end

if phase == "Suspended" then
  return result("Suspended", "Suspended")
end

return result("Progressing", "Waiting for the pipeline to report its phase")
