-- Suspend and resume a Sluice CdcPipeline from Argo CD (they set spec.suspend).
local actions = {}
local suspended = obj.spec ~= nil and obj.spec.suspend == true
actions["suspend"] = {["disabled"] = suspended}
actions["resume"] = {["disabled"] = not suspended}
return actions
