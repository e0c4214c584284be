"""Step 5, the plan: ``build_launch_plan`` runs facts, decisions, flags and checks in order and assembles the
``LaunchPlan`` with one command per node.
"""
