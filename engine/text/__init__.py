"""Text every layer of the engine reads or writes, with no engine imports of its own: a
model's answer made safe to handle, secrets kept out, tokens counted, durations said."""
