-- The operator starts the Spark driver again; it resumes from the state in status.
if obj.spec ~= nil then
  obj.spec.suspend = false
end
return obj
