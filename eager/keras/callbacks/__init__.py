"""`eager.keras.callbacks`: hooks into fit/evaluate/predict, as Keras 3 defines them."""
from .base import Callback, CallbackList, History, LambdaCallback, ProgbarLogger
from .logging import CSVLogger, TensorBoard
from .monitoring import EarlyStopping, LearningRateScheduler, ModelCheckpoint, ReduceLROnPlateau

__all__ = ["Callback", "CallbackList", "History", "LambdaCallback", "ProgbarLogger", "CSVLogger", "TensorBoard",
           "EarlyStopping", "LearningRateScheduler", "ModelCheckpoint", "ReduceLROnPlateau"]
