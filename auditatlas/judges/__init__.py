"""LLM judges: the Who&When protocols and a per-step score, through any OpenAI-compatible
Chat Completions endpoint, written as prediction sets like the released judges'.

``templates`` (the prompts, shipped as files), ``contract`` (the reply contract and its
parser), ``endpoint`` (calls, retries, JSON mode), ``cache`` (replies kept in the store),
``protocols`` (how each protocol spends calls on a run), ``engine`` (the run over a slice and
the write of its set).
"""
