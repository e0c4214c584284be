"""Step 4, checks: findings about the facts and the decisions (the pair, the command, the release, the
method); a check reads them and decides nothing.
"""
