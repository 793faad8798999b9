"""Upper bounds of the numeric knobs, shared by every config (RL runs, long2short variants, suites).

They are wide enough for any run the report describes (128k-token contexts, thousands of GPUs) and
narrow enough that a typo (batch_size 10^12, a learning rate of 10^308) is refused at the request
instead of failing later on a worker.
"""

MAX_SEED = 2**31 - 1  # fits every integer column (an evaluation of a checkpoint stores the run seed)
MAX_TOKENS = 1_048_576  # 1M tokens: eight times the report's 128k context
MAX_STEPS = 1_000_000  # iterations, SFT steps, epochs, schedule lengths
MAX_BATCH = 65_536  # problems per batch, sequences per step
MAX_SAMPLES_PER_PROBLEM = 1_024
MAX_LEARNING_RATE = 1.0
MAX_TEMPERATURE = 10.0
MAX_WEIGHT = 1_000.0  # reward weights, penalties, tau, beta
MAX_GRAD_NORM = 1e12  # a huge clipping norm turns clipping off
MAX_NODES = 4_096
MAX_PROCESSES_PER_NODE = 64
MAX_PARALLEL_SIZE = 1_024
MAX_STORED_SAMPLES = 10_000
