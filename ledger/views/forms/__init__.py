"""What people type on the dashboard, one module a topic: finding things (``search``),
changing memories (``memories``), people and their passwords (``people``), agents
(``agents``) and the write policy (``policy``).

Forms check what was typed and say what is wrong with it, beside its field; whether a
change may be made at all is for the actions, whose refusals the views show.
"""
