"""The reserved token ids and their tokens, the one convention every part of t2t_lite shares.

0 pads (and starts the shifted decoder input), 1 ends every sequence, 2 stands for unknown
pieces. Vocabulary files list their tokens first, in this order (t2t_lite.data.tokenizers).
"""
PAD_ID = 0
EOS_ID = 1
UNK_ID = 2

PAD_TOKEN = "<pad>"
EOS_TOKEN = "</s>"
UNK_TOKEN = "<unk>"
RESERVED_TOKENS = (PAD_TOKEN, EOS_TOKEN, UNK_TOKEN)  # by id
