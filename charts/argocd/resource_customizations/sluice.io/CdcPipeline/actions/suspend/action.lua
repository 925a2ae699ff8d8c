-- The operator stops the Spark driver and keeps the pipeline's state in status.
if obj.spec == nil then
  obj.spec = {}
end
obj.spec.suspend = true
return obj
